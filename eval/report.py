"""Tables and the figure of a replay result (the paper's Table 2, Tables 3-4, Appendix A,
Figure 4).

The result document (:func:`brainbox.eval.runner.run`) holds one entry per cohort (each
source, plus ``all`` when there are several). For each cohort this module prints:

- **Coverage**: Probe, Gold targets, Eligible, Probes, Scored (Table 2).
- **Results**: brainbox against the strongest baseline per probe (chosen after the fact,
  as in the paper), the difference and its paired 95% interval, and *n* (Tables 3-4).
- **All methods**: MRR of every method (Appendix A), and every baseline's difference
  with its interval.
- Timings: wall time, events per second, and where the time went.

:func:`figure` draws MRR per probe for brainbox and the strongest baseline with the
bootstrap interval of each as whiskers, one panel per cohort; it needs matplotlib (the
``plot`` extra) and returns ``False`` without it.
"""

from __future__ import annotations

from brainbox.eval.metrics import PROBE_LABELS, PROBES

NAMES = {"brainbox": "BrainBox", "recency": "Recency", "frequency": "Frequency",
         "bm25": "BM25", "cosession": "Co-session", "random": "Random"}


def _f(x, signed: bool = False) -> str:
    if x is None:
        return "–"
    s = f"{x:+.3f}" if signed else f"{x:.3f}"
    return s.replace("-", "−")


def _ci(ci) -> str:
    return "–" if not ci else f"[{_f(ci[0], True)}, {_f(ci[1], True)}]"


def _table(header: list[str], rows: list[list[str]], align: str) -> list[str]:
    out = ["| " + " | ".join(header) + " |",
           "|" + "|".join(":--" if a == "l" else "--:" for a in align) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def coverage_table(cohort: dict) -> list[str]:
    rows = []
    for p in PROBES:
        c = cohort["coverage"][p]
        rows.append([PROBE_LABELS[p], f"{c['gold']:,}", f"{c['eligible']:,}",
                     f"{c['probes']:,}", f"{c['scored']:,}"])
    return _table(["Probe", "Gold targets", "Eligible", "Probes", "Scored"], rows, "lrrrr")


def results_table(cohort: dict) -> list[str]:
    rows = []
    for p in PROBES:
        r = cohort["results"][p]
        best = r["strongest"]
        if best is None:
            rows.append([PROBE_LABELS[p], "–", "–", "–", "–", "0"])
            continue
        d = r["diff"][best]
        rows.append([PROBE_LABELS[p], _f(r["mrr"]["brainbox"]),
                     f"{NAMES[best]} {_f(r['mrr'][best])}", _f(d["diff"], True), _ci(d["ci"]),
                     str(r["n"])])
    return _table(["Probe", "BrainBox", "Baseline", "Difference", "95% CI", "n"], rows,
                  "lrlrll")


def methods_table(cohort: dict, methods: list[str]) -> list[str]:
    rows = []
    for p in PROBES:
        r = cohort["results"][p]
        rows.append([PROBE_LABELS[p]] + [_f(r["mrr"].get(m)) for m in methods])
    return _table(["Probe"] + [NAMES.get(m, m) for m in methods], rows, "l" + "r" * len(methods))


def differences_table(cohort: dict, methods: list[str]) -> list[str]:
    rows = []
    for p in PROBES:
        r = cohort["results"][p]
        cells = []
        for m in methods[1:]:
            d = r["diff"].get(m)
            cells.append("–" if not d else f"{_f(d['diff'], True)} {_ci(d['ci'])}")
        rows.append([PROBE_LABELS[p]] + cells)
    return _table(["Probe"] + [f"− {NAMES.get(m, m)}" for m in methods[1:]], rows,
                  "l" + "l" * (len(methods) - 1))


def markdown(result: dict) -> str:
    """The whole report as Markdown."""
    s = result["settings"]
    methods = s["methods"]
    tm = result["timings"]
    lines = ["# brainbox replay", ""]
    ablate = ", ".join(s["ablate"]) or "none"
    lines.append(f"Source commit `{result['source_commit']}`"
                 + (" (working tree modified)" if result.get("source_dirty") else "")
                 + f"; seed {s['seed']}; {s['bootstrap']} bootstrap resamples; split "
                 f"{s['split']}; ablated channels: {ablate}. MRR@{s['k']['files']} for files, "
                 f"MRR@{s['k']['tools']} for tools, conditional on eligible targets.")
    lines.append("")
    for name, c in result["cohorts"].items():
        lines += [f"## {name}", "",
                  f"{c['series']} repositories, {c['tasks']:,} tasks, {c['events']:,} events.",
                  "", ("Coverage (*Eligible* targets were seen in an earlier task; for P1 gold "
                  "targets are summed over tasks, for P2 and P3 they are predictions):"), ""]
        lines += coverage_table(c) + [""]
        lines += [("BrainBox against the strongest baseline (*n*: trajectories with a scored "
                  "target; paired 95% bootstrap interval of the difference):"), ""]
        lines += results_table(c) + ["", "All methods (MRR):", ""]
        lines += methods_table(c, methods) + ["", "BrainBox minus each baseline:", ""]
        lines += differences_table(c, methods) + [""]
    lines += ["## Timings", ""]
    eps = tm.get("events_per_s")
    lines.append(f"{tm['events']:,} events replayed in {tm['replay_s']:.1f} s "
                 f"({eps or 0:,.0f} events/s; executor {tm['executor']}"
                 + (f", workers: {tm['workers']}" if tm.get("workers") else "")
                 + f"); {tm['events_per_s_per_core'] or 0:,.0f} events/s per core (CPU time); "
                 f"wall {tm['wall_s']:.1f} s including loading {tm['load_s']:.1f} s.")
    lines += ["", "| Cohort | Events | Series wall s | Series CPU s | Events/s per core |",
              "|:--|--:|--:|--:|--:|"]
    for name, c in tm.get("cohorts", {}).items():
        lines.append(f"| {name} | {c['events']:,} | {c['series_wall_s']:.1f} | "
                     f"{c['series_cpu_s']:.1f} | {c['events_per_s_per_core'] or 0:,.0f} |")
    parts = tm["parts_s"]
    total = sum(parts.values()) or 1.0
    lines += ["", "| Part | Seconds | Share | µs/event |", "|:--|--:|--:|--:|"]
    for k, v in parts.items():
        lines.append(f"| {k} | {v:.2f} | {100 * v / total:.0f}% | "
                     f"{1e6 * v / max(tm['events'], 1):.1f} |")
    return "\n".join(lines) + "\n"


def figure(result: dict, path: str) -> bool:
    """Figure 4 of the paper for this result; ``False`` when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    cohorts = list(result["cohorts"].items())
    ncols = min(3, len(cohorts))
    nrows = -(-len(cohorts) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 3.4 * nrows), squeeze=False,
                             sharey=True)
    flat = [ax for row in axes for ax in row]
    for ax in flat[len(cohorts):]:
        ax.axis("off")
    width = 0.38
    for ax, (name, c) in zip(flat, cohorts):
        xs = range(len(PROBES))
        for off, which in ((-width / 2, "brainbox"), (width / 2, "best")):
            vals, lo, hi, labels = [], [], [], []
            for p in PROBES:
                r = c["results"][p]
                m = "brainbox" if which == "brainbox" else r["strongest"]
                v = r["mrr"].get(m) if m else None
                ci = r["ci"].get(m) if m else None
                vals.append(v or 0.0)
                lo.append((v - ci[0]) if ci and v is not None else 0.0)
                hi.append((ci[1] - v) if ci and v is not None else 0.0)
                labels.append(NAMES.get(m, "") if m else "")
            bars = ax.bar([x + off for x in xs], vals, width, yerr=[lo, hi], capsize=3,
                          color="#c0392b" if which == "brainbox" else "white",
                          edgecolor="#c0392b" if which == "brainbox" else "#555555",
                          linestyle="-" if which == "brainbox" else "--",
                          label="BrainBox" if which == "brainbox" else "strongest baseline")
            if which == "best":
                for b, lab in zip(bars, labels):
                    ax.text(b.get_x() + b.get_width() / 2, 0.01, lab, rotation=90,
                            ha="center", va="bottom", fontsize=7, color="#333333")
        ax.set_xticks(list(xs))
        ax.set_xticklabels([PROBE_LABELS[p].replace(" next ", "\nnext ") for p in PROBES],
                           fontsize=8)
        ax.set_title(f"{name} ({c['tasks']} tasks)", fontsize=9)
        ax.set_ylim(0, 1)
        ax.grid(axis="y", alpha=0.3)
    for row in axes:
        row[0].set_ylabel("conditional MRR (MRR@3 for tools)")
    axes[0][0].legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True
