"""``placement-api status``, ``audit`` and ``policy``: the operator's commands."""

from __future__ import annotations

import asyncio
import json
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

if TYPE_CHECKING:
    from placement_api.operator.audit import AuditReport

policy_app = typer.Typer(
    help="The effective policy, and a sample policy file.", no_args_is_help=True
)
out = Console()
err = Console(stderr=True)

_STYLES = {0: "green", 1: "yellow", 2: "red"}


def status(settings: Settings) -> NoReturn:
    _report(status_checks.run_checks(settings))


def status_without_settings(reason: str) -> NoReturn:
    """The config file is unusable: its row alone, as no other check can run."""
    _report([status_checks.config_file_failure(reason)])


def _report(results: list[status_checks.CheckResult]) -> NoReturn:
    table = Table(title="Upgrade Check Results")
    for column in ("Check", "Result", "Details"):
        table.add_column(column)
    for result in results:
        style = _STYLES[result.code]
        label = result.code.name.title()
        # Details name config sections ("[placement]"), which are not markup.
        table.add_row(result.name, f"[{style}]{label}[/{style}]", escape(result.details))
    out.print(table)
    raise typer.Exit(code=int(status_checks.worst(results)))


def audit(settings: Settings, *, fix: bool, as_json: bool) -> None:
    from placement_api.operator import audit as audit_checks

    url = settings.database_url
    database.require_existing(url)
    with Progress(console=err, transient=True, disable=as_json) as progress:
        task = progress.add_task("auditing", total=len(audit_checks.CHECKS))

        def on_check(name: str) -> None:
            progress.update(task, description=f"checking {name}", advance=1)

        report = asyncio.run(audit_checks.run_audit(url, fix=fix, on_check=on_check))
    if as_json:
        document = {
            "findings": [asdict(finding) for finding in report.findings],
            "fixed": report.fixed,
        }
        typer.echo(json.dumps(document, indent=2))
    else:
        _print_report(report)
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
        table.add_row(finding.check, finding.subject, finding.details, fixable)
    out.print(table)


def policy_list(settings: Settings, *, as_json: bool) -> None:
    from placement_api.auth.policy import Policy, effective_rules

    policy = Policy(
        policy_file=settings.policy_file,
        enforce_new_defaults=settings.enforce_new_defaults,
        enforce_scope=settings.enforce_scope,
    )
    rules = effective_rules(policy)
    if as_json:
        typer.echo(json.dumps([asdict(rule) for rule in rules], indent=2))
        return
    table = Table(title=f"Effective policy ({settings.policy_file or 'defaults only'})")
    for column in ("Rule", "Enforced check", "From"):
        table.add_column(column)
    for rule in rules:
        table.add_row(rule.name, rule.check, "policy file" if rule.from_file else "default")
    out.print(table)


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
