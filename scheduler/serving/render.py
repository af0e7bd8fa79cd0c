"""Decisions and explanations as readable terminal tables (rich)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from scheduler.answers.explain import Explanation, InstanceExplanation
from scheduler.answers.results import ScheduleResponse


def _resources(allocations: dict[str, dict[str, int]]) -> str:
    return "; ".join(
        ", ".join(f"{rc}={n}" for rc, n in sorted(resources.items()))
        for resources in allocations.values()
    )


def render_decision(console: Console, response: ScheduleResponse) -> None:
    title = "Selections (dry run: nothing was claimed)" if response.dry_run else "Selections"
    table = Table(title=title, show_lines=False)
    for column in ("consumer", "host", "allocated", "alternates"):
        table.add_column(column)
    for selection in response.selections:
        allocated = {rp: a.resources for rp, a in selection.allocations.items()}
        table.add_row(
            selection.consumer_uuid,
            selection.provider.name,
            _resources(allocated),
            ", ".join(a.provider.name for a in selection.alternates) or "-",
        )
    console.print(table)
    render_explanation(console, response.explanation)


def render_explanation(console: Console, explanation: Explanation) -> None:
    if explanation.placement is not None:
        placement = explanation.placement
        console.print(
            f"[bold]Placement[/bold] GET {placement.request.path}?{placement.request.query} "
            f"(microversion {placement.request.microversion}): "
            f"{placement.allocation_requests} allocation request(s) on {placement.hosts} host(s)"
        )
        for finding in placement.diagnosis:
            console.print(f"  [yellow]-[/yellow] {finding}")
        for term in placement.failing_terms:
            console.print(f"  {term.hosts} host(s) fail {term.term}")
    for index, instance in enumerate(explanation.instances, start=1):
        console.print(f"\n[bold]Instance {index}[/bold] {instance.consumer_uuid}")
        _render_filters(console, instance)
        _render_weights(console, instance)
        for attempt in instance.claims:
            colour = "green" if attempt.outcome == "claimed" else "red"
            detail = f": {attempt.detail}" if attempt.detail else ""
            console.print(
                f"  claim on {attempt.host}: [{colour}]{attempt.outcome}[/{colour}]{detail}"
            )
    if explanation.failure is not None:
        console.print(
            f"\n[bold red]No valid host[/bold red] (stage {explanation.failure.stage}): "
            f"{explanation.failure.reason}"
        )
    if explanation.released:
        console.print(f"Released claims of: {', '.join(explanation.released)}")


def _render_filters(console: Console, instance: InstanceExplanation) -> None:
    title = f"Filters ({instance.hosts_considered} candidate hosts)"
    if instance.search_stopped:
        title = f"Filters ({instance.hosts_considered} candidate hosts, {instance.search_stopped})"
    table = Table(title=title)
    for column in ("stage", "in", "out", "rejected (first ones)"):
        table.add_column(column)
    if instance.hosts_with_room < instance.hosts_examined:
        reasons = "\n".join(f"{r.host}: {r.reason}" for r in instance.capacity_rejected[:3])
        table.add_row(
            "capacity (earlier instances)",
            str(instance.hosts_examined),
            str(instance.hosts_with_room),
            reasons,
        )
    for report in instance.filters:
        if report.skipped:
            table.add_row(report.name, str(report.hosts_in), str(report.hosts_out), report.skipped)
            continue
        shown = "\n".join(f"{r.host}: {r.reason}" for r in report.rejected[:3])
        hidden = report.hosts_in - report.hosts_out - min(3, len(report.rejected))
        if hidden > 0:
            shown += f"\n... and {hidden} more"
        table.add_row(report.name, str(report.hosts_in), str(report.hosts_out), shown)
    console.print(table)


def _render_weights(console: Console, instance: InstanceExplanation) -> None:
    if not instance.weighed:
        return
    # A weigher with raw 0 everywhere (a group weigher without a group) only adds noise.
    shown = [
        index
        for index, term in enumerate(instance.weighed[0].terms)
        if any(host.terms[index].raw for host in instance.weighed)
    ]
    table = Table(title="Best hosts (weighted = normalised x multiplier (raw))")
    table.add_column("host")
    table.add_column("total", justify="right")
    for index in shown:
        table.add_column(instance.weighed[0].terms[index].weigher, justify="right")
    chosen = instance.chosen.uuid if instance.chosen else None
    for host in instance.weighed:
        label = f"[bold green]{host.host} *[/bold green]" if host.uuid == chosen else host.host
        cells = [f"{host.terms[i].weighted:+.3f} ({host.terms[i].raw:g})" for i in shown]
        table.add_row(label, f"{host.total:.3f}", *cells)
    console.print(table)
