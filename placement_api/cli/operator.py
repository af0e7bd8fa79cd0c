"""``placement-api status``, ``audit`` and ``policy``: the operator's commands."""

from __future__ import annotations

import asyncio
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import Progress
from rich.table import Table

from placement_api.operator import database
from placement_api.operator import status as status_checks
from placement_api.settings import Settings
from placement_client.output import Format, emit, print_table

if TYPE_CHECKING:
    from placement_api.operator.audit import AuditReport

policy_app = typer.Typer(
    help="The effective policy, and a sample policy file.", no_args_is_help=True
)
out = Console()
err = Console(stderr=True)

_STYLES = {0: "green", 1: "yellow", 2: "red"}


def status(settings: Settings, fmt: Format = Format.TABLE) -> NoReturn:
    _report(status_checks.run_checks(settings), fmt)


def status_without_settings(reason: str, fmt: Format = Format.TABLE) -> NoReturn:
    """The config file is unusable: its row alone, as no other check can run."""
    _report([status_checks.config_file_failure(reason)], fmt)


def _report(results: list[status_checks.CheckResult], fmt: Format) -> NoReturn:
    worst = status_checks.worst(results)
    if fmt is Format.TABLE:
        table = Table(title="Upgrade Check Results")
        for column in ("Check", "Result", "Details"):
            table.add_column(column)
        for result in results:
            style = _STYLES[result.code]
            label = result.code.name.title()
            # Details name config sections ("[placement]"), which are not markup.
            table.add_row(result.name, f"[{style}]{label}[/{style}]", escape(result.details))
        print_table(table, out)
    else:
        # As placement-status upgrade check --json: the worst code, then each check.
        document = {
            "name": "Upgrade Check Results",
            "result": int(worst),
            "checks": [
                {"check": r.name, "result": int(r.code), "details": r.details} for r in results
            ],
        }
        rows = [[r.name, r.code.name.lower(), r.details] for r in results]
        emit(["check", "result", "details"], rows, fmt, document=document)
    raise typer.Exit(code=int(worst))


def audit(settings: Settings, *, fix: bool, fmt: Format) -> None:
    from placement_api.operator import audit as audit_checks

    url = settings.database_url
    database.require_existing(url)
    with Progress(console=err, transient=True, disable=fmt is not Format.TABLE) as progress:
        task = progress.add_task("auditing", total=len(audit_checks.CHECKS))

        def on_check(name: str) -> None:
            progress.update(task, description=f"checking {name}", advance=1)

        report = asyncio.run(audit_checks.run_audit(url, fix=fix, on_check=on_check))
    if fmt is Format.TABLE:
        _print_report(report)
    else:
        document = {
            "findings": [asdict(finding) for finding in report.findings],
            "fixed": report.fixed,
        }
        rows = [[f.check, f.subject, f.details, f.fixable] for f in report.findings]
        emit(["check", "subject", "details", "fixable"], rows, fmt, document=document)
    raise typer.Exit(code=1 if report.findings else 0)


def _print_report(report: AuditReport) -> None:
    for name, count in report.fixed.items():
        if count:
            out.print(f"fixed {name}: {count} rows")
    if not report.findings:
        out.print("[green]no findings[/green]")
        return
    table = Table(title=f"{len(report.findings)} findings")
    for column in ("Check", "Subject", "Details", "Fixable"):
        table.add_column(column)
    for finding in report.findings:
        fixable = "yes (--fix)" if finding.fixable else "no"
        table.add_row(finding.check, finding.subject, escape(finding.details), fixable)
    print_table(table, out)


def policy_list(settings: Settings, *, fmt: Format) -> None:
    from placement_api.auth.policy import Policy, effective_rules

    policy = Policy(
        policy_file=settings.policy_file,
        enforce_new_defaults=settings.enforce_new_defaults,
        enforce_scope=settings.enforce_scope,
    )
    rules = effective_rules(policy)
    rows = [[r.name, r.check, "policy file" if r.from_file else "default"] for r in rules]
    title = f"Effective policy ({settings.policy_file or 'defaults only'})"
    document = [asdict(rule) for rule in rules]
    emit(["Rule", "Enforced check", "From"], rows, fmt, title=title, document=document)


def policy_sample(output: Path | None) -> None:
    from oslo_policy import generator

    args = ["--namespace", "placement"]
    if output is not None:
        args += ["--output-file", str(output)]
    generator.generate_sample(args=args)


JsonOption = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
FixOption = Annotated[
    bool,
    typer.Option(
        help="Repair what is safe to repair: recompute inventories.used, delete allocations "
        "on missing providers and consumers without allocations. Run it with the API "
        "stopped or idle."
    ),
]
OutputOption = Annotated[
    Path | None,
    typer.Option(
        "--output-file", "--output", help="Write the sample here instead of standard output."
    ),
]
