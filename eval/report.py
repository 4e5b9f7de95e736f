"""Tables and the figure of a replay result (the paper's Table 2, Tables 3-4, Appendix A,
Figure 4).

The result document (:func:`brainbox.eval.runner.run`) holds one entry per cohort (each
source, plus ``all`` when there are several) for each view of the files
(:mod:`brainbox.eval.views`: ``views``, the headline view first, whose cohorts are also
the top-level ``cohorts``). For each view ("All files", "Repository files only") and
cohort this module prints:

- **Coverage**: Probe, Gold targets, Eligible, Probes, Scored (Table 2).
- **Results**: brainbox against the strongest baseline per probe (chosen after the fact,
  as in the paper), the difference and its paired 95% interval, and *n* (Tables 3-4).
- **All methods**: MRR of every method (Appendix A), and every baseline's difference
  with its interval.
- **Ablations** (``--ablations``), per view, for the pooled cohort: the full model and
  each channel removed, the difference and its paired interval (:func:`ablation_table`).
- Timings: wall time, events per second, and where the time went.

:func:`figure` draws MRR per probe for brainbox and the strongest baseline with the
bootstrap interval of each as whiskers, one panel per cohort and view, with n and the
eligible share on the figure (choices in :func:`draw`); a ``.png`` is written with an
``.svg`` beside it. It needs matplotlib (the ``plot`` extra) and returns ``False`` without it.
"""

from __future__ import annotations

from brainbox.eval.metrics import PROBE_LABELS, PROBES
from brainbox.eval.views import LABELS

NAMES = {"brainbox": "BrainBox", "recency": "Recency", "frequency": "Frequency",
         "bm25": "BM25", "cosession": "Co-session", "random": "Random"}


def _f(x, signed: bool = False) -> str:
    if x is None:
        return "–"
    if round(x, 3) == 0:
        x = 0.0  # not "−0.000" for a difference of −0.0002
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


def views(result: dict) -> list[tuple[str | None, dict]]:
    """[(view name, its cohorts)], the headline view first; ``[(None, cohorts)]`` for a
    result without views (written before ``--files``)."""
    by_view = result.get("views")
    if not by_view:
        return [(None, result["cohorts"])]
    order = result.get("settings", {}).get("views") or list(by_view)
    return [(v, by_view[v]["cohorts"]) for v in order if v in by_view]


def ablation_table(result: dict, view: str) -> list[str]:
    """Probe x ablation of ``view``'s pooled cohort: the full model's MRR, then each
    channel removed with its MRR, the difference (ablated minus full) and its interval."""
    abl = result["ablations"][view]
    pooled = list(result["views"][view]["cohorts"].values())[-1]["results"]
    rows = [["full model"] + [_f(pooled[p]["mrr"].get("brainbox")) for p in PROBES]]
    for channel, by_probe in abl.items():
        cells = []
        for p in PROBES:
            e = by_probe[p]
            if e["mrr"] is None:
                cells.append("–")
            else:
                cells.append(f"{_f(e['mrr'])} {_f(e['diff'], True)}"
                             + (f" {_ci(e['ci'])}" if e["ci"] else ""))
        rows.append([f"− {channel}"] + cells)
    return _table(["Model"] + [PROBE_LABELS[p] for p in PROBES], rows, "l" + "l" * len(PROBES))


def calibration_section(result: dict, vs) -> list[str]:
    """The engine's confidence as a probability: expected calibration error (leave one
    repository out) per view and context, and the reliability table of each view."""
    cal = result["calibration"]
    first = next(iter(cal.values()))
    lines = ["## Calibration", "",
             ("Each file the engine ranks in its top 10 at P1 and P2 is a prediction; it hits "
              f"when the task touches the file within {first.get('horizon', 'the horizon')}. "
              "Its probability comes from isotonic maps fitted on the other repositories "
              "(leave one repository out), one per context (*prompt*: no file of the project "
              "in the session yet; *session*). ECE over 10 equal-width bins."), "",
             "| View | Context | Predictions | ECE |", "|:--|:--|--:|--:|"]
    for view, _ in vs:
        c = cal.get(view or "all")
        if not c:
            continue
        for name, r in list(c["contexts"].items()) + [("both", c["all"])]:
            ece = "–" if r["ece"] is None else f"{r['ece']:.3f}"
            lines.append(f"| {LABELS.get(view, view)} | {name} | {r['n']:,} | {ece} |")
    for view, _ in vs:
        c = cal.get(view or "all")
        if not c:
            continue
        lines += ["", f"Reliability, {LABELS.get(view, view)} (both contexts):", "",
                  "| Probability | Predictions | Mean probability | Touched |",
                  "|:--|--:|--:|--:|"]
        for b in c["all"]["bins"]:
            if b["n"]:
                lines.append(f"| {b['lo']:.1f}–{b['hi']:.1f} | {b['n']:,} | "
                             f"{b['mean_p']:.3f} | {b['rate']:.3f} |")
    return lines + [""]


def _cohort_section(name: str, c: dict, methods: list[str], level: str) -> list[str]:
    lines = [f"{level} {name}", "",
             f"{c['series']} repositories, {c['tasks']:,} tasks, {c['events']:,} events.",
             "", ("Coverage (*Eligible* targets were seen in an earlier task; for P1 gold "
                  "targets are summed over tasks, for P2 and P3 they are predictions):"), ""]
    lines += coverage_table(c) + [""]
    lines += [("BrainBox against the strongest baseline (*n*: trajectories with a scored "
               "target; paired 95% bootstrap interval of the difference):"), ""]
    lines += results_table(c) + ["", "All methods (MRR):", ""]
    lines += methods_table(c, methods) + ["", "BrainBox minus each baseline:", ""]
    lines += differences_table(c, methods) + [""]
    return lines


def localization_section(loc: dict) -> list[str]:
    """Whole-repository localization (`brainbox.eval.localization`, `--repos DIR`): per
    gold, each method's means and brainbox minus each with its paired interval."""
    sk = loc["skipped"]
    lines = ["## Whole-repository localization", "",
             (f"Every file of the snapshots in `{loc['folder']}` is a candidate (the probes "
             f"above rank only files memory has seen). {loc['tasks']} tasks at or after "
             f"their repository's snapshot; left out: {sk['before_snapshot']} before it (no "
             f"foresight), {sk['no_snapshot']} without a snapshot, {sk['no_manifest_pr']} "
             "whose snapshot has no PR number in MANIFEST.tsv. A task is eligible for a "
             "gold when one of its files is in the snapshot."), ""]
    names = {"edit": "files the agent edited", "patch": "files of the gold patch"}
    for kind, g in loc["golds"].items():
        if not g["scored"]:
            lines += [f"Gold: {names.get(kind, kind)}: no eligible task.", ""]
            continue
        ms = list(g["mean"])
        frac = g["scored"] / loc["tasks"] if loc["tasks"] else 0.0
        lines += [(f"### Gold: {names.get(kind, kind)} ({g['scored']} eligible tasks, "
                  f"{frac:.0%})"), ""]
        lines += _table(["Method", *loc["metrics"]],
                        [[m, *(_f(g["mean"][m][k]) for k in loc["metrics"])] for m in ms],
                        "l" + "r" * len(loc["metrics"]))
        lines += ["", f"{ms[0]} minus each (paired 95% bootstrap interval):", ""]
        lines += _table(["Minus", *loc["metrics"]],
                        [[m, *(f"{_f(d[k]['mean'], True)} {_ci(d[k]['ci'])}"
                               for k in loc["metrics"])] for m, d in g["diff"].items()],
                        "l" + "r" * len(loc["metrics"]))
        lines.append("")
    c = loc.get("conditional") or {}
    if c.get("scored"):
        d = c["diff"]["memory"]
        lines += [(f"Conditional P1-edit ({c['scored']} tasks with an edited file memory had "
                  "seen; only such files ranked): brainbox with the index "
                  f"MRR@10 {_f(c['mean']['brainbox']['MRR@10'])}, memory alone "
                  f"{_f(c['mean']['memory']['MRR@10'])}, difference "
                  f"{_f(d['MRR@10']['mean'], True)} {_ci(d['MRR@10']['ci'])}; Acc@5 "
                  f"{_f(d['Acc@5']['mean'], True)} {_ci(d['Acc@5']['ci'])}."), ""]
    return lines


def markdown(result: dict) -> str:
    """The whole report as Markdown: each view (the headline first), its cohorts, the
    ablation tables, the timings."""
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
    vs = views(result)
    if vs[0][0] is not None:
        lines += ["", f"Views: {', '.join(LABELS[v] for v, _ in vs)}; the headline (the "
                  f"top-level cohorts of the JSON) is *{LABELS[vs[0][0]]}*."
                  + (f" In *{LABELS['repo']}* no method ranks, is scored on, or learns from a "
                     "file the agent created (in this task or an earlier one of its series)."
                     if any(v == "repo" for v, _ in vs) else "")]
    lines.append("")
    for view, cohorts in vs:
        level = "##"
        if view is not None:
            lines += [f"## {LABELS[view]}", ""]
            level = "###"
        for name, c in cohorts.items():
            lines += _cohort_section(name, c, methods, level)
    if result.get("ablations"):
        pooled = list(vs[0][1])[-1]
        skipped = "; ".join(f"{c}: {why}" for c, why in s.get("ablations_skipped", {}).items())
        lines += ["## Ablations", "",
                  (f"Each channel removed in turn, cohort *{pooled}*: the ablated model's MRR, "
                   "the difference (ablated minus full) and its paired 95% bootstrap interval "
                   "over whole trajectories (the resamples of the tables above)."
                   + (f" Not ablated: {skipped}." if skipped else "")), ""]
        for view, _ in vs:
            if view in result["ablations"]:
                lines += [f"### {LABELS[view]}", ""] + ablation_table(result, view) + [""]
    if result.get("calibration"):
        lines += calibration_section(result, vs)
    if result.get("localization"):
        lines += localization_section(result["localization"])
    lines += ["## Timings", ""]
    eps = tm.get("events_per_s")
    if tm.get("replays", 1) > 1 or tm.get("reused"):
        lines.append(f"{tm['replays']} series replays (each view and model; "
                     f"{tm.get('reused', 0)} more reused a view equal to the all view).")
    lines.append(f"{tm['events']:,} events replayed in {tm['replay_s']:.1f} s "
                 f"({eps or 0:,.0f} events/s; executor {tm['executor']}"
                 + (f", workers: {tm['workers']}" if tm.get("workers") else "")
                 + f"); {tm['events_per_s_per_core'] or 0:,.0f} events/s per core (CPU time); "
                 f"wall {tm['wall_s']:.1f} s including loading {tm['load_s']:.1f} s"
                 + (f" and {tm['compile_s']:.1f} s of loading or compiling kernels (left out "
                    f"of the events/s)" if (tm.get("compile_s") or 0) >= 0.05 else "") + ".")
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


BRAINBOX_COLOR, BASELINE_COLOR = "#c0392b", "#555555"


def _panel(ax, name: str, c: dict) -> None:
    """One cohort: BrainBox and the strongest baseline per probe, whiskers, n above."""
    width, top = 0.36, 1.0
    xs = list(range(len(PROBES)))
    ticks = []
    for x, p in zip(xs, PROBES):
        r, cov = c["results"][p], c["coverage"][p]
        best = r["strongest"]
        share = f"{100 * cov['eligible'] / cov['gold']:.0f}% eligible" if cov["gold"] else ""
        ticks.append("\n".join((PROBE_LABELS[p].replace(" next ", "\nnext "),
                                f"vs {NAMES.get(best, best)}" if best else "no target",
                                share)))
        high = 0.0
        for off, m, style in ((-width / 2, "brainbox", "bb"), (width / 2, best, "base")):
            v = r["mrr"].get(m) if m else None
            if v is None:
                continue
            ci = r["ci"].get(m)
            err = [[v - ci[0]], [ci[1] - v]] if ci else None
            ax.bar(x + off, v, width, yerr=err, capsize=3, error_kw={"elinewidth": 1},
                   color=BRAINBOX_COLOR if style == "bb" else "white",
                   edgecolor=BRAINBOX_COLOR if style == "bb" else BASELINE_COLOR,
                   hatch=None if style == "bb" else "///", linewidth=1)
            high = max(high, ci[1] if ci else v, v)
        if best:
            ax.text(x, high + 0.025, f"n={r['n']:,}", ha="center", va="bottom", fontsize=7)
        top = max(top, high + 0.12)
    ax.set_xticks(xs)
    ax.set_xticklabels(ticks, fontsize=7)
    ax.set_ylim(0, top)  # to the highest whisker and its n label: nothing is clipped
    ax.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    ax.tick_params(axis="y", labelsize=8)
    repos = f"{c['series']:,} repositor{'y' if c['series'] == 1 else 'ies'}"
    ax.set_title(f"{name}\n{c['tasks']:,} tasks, {repos}", fontsize=8.5)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)


def _reliability_panel(ax, name: str, c: dict) -> None:
    """The reliability diagram of one view: per context, each bin's mean probability
    against the share touched (leave one repository out), the diagonal for reference."""
    ax.plot([0, 1], [0, 1], color=BASELINE_COLOR, linewidth=0.8, linestyle="--")
    for (ctx, r), color in zip(c["contexts"].items(), (BRAINBOX_COLOR, "#2c7fb8")):
        pts = [(b["mean_p"], b["rate"]) for b in r["bins"] if b["n"]]
        if pts:
            ax.plot(*zip(*pts), marker="o", markersize=3, linewidth=1, color=color,
                    label=f"{ctx} (ECE {r['ece']:.3f}, n={r['n']:,})")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("predicted probability (held out)", fontsize=7)
    ax.set_ylabel("share touched", fontsize=7)
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=6.5, loc="upper left", frameon=False)
    ax.set_title(f"Reliability, {name}".strip(", "), fontsize=8.5)
    ax.grid(alpha=0.3)


def draw(result: dict):
    """The figure as a matplotlib Figure (``figure`` saves it). Choices, for print: 7 in
    wide (a page column pair) at 200 dpi, 7x4.5 in for one cohort; the legend above the
    panels, never over a bar; each panel's axis reaches its highest whisker (the trial's
    openhands P1 intervals, n = 4, ran past 1.0 and were clipped); n (trajectories with a
    scored target) above each pair, the eligible share and the baseline's name under each
    probe; a caption that says what conditional MRR is. With two views (``--files both``)
    each cohort is a row and each view a column, the headline view on the left, so a
    cohort's two views sit side by side on one axis scale each."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    vs = views(result)
    if len(vs) == 1:  # one view: the cohorts in two columns
        cohorts = list(vs[0][1].items())
        if vs[0][0] is not None:
            cohorts = [(f"{LABELS[vs[0][0]]}\n{name}", c) for name, c in cohorts]
        ncols = 1 if len(cohorts) == 1 else 2
        nrows = -(-len(cohorts) // ncols)
        flat_cohorts = cohorts
    else:  # one column per view (the headline left), one row per cohort
        names = list(vs[0][1])
        ncols, nrows = len(vs), len(names)
        flat_cohorts = [(f"{LABELS[v]}\n{name}", cs[name]) for name in names for v, cs in vs
                        if name in cs]
    cal = result.get("calibration") or {}
    cal_views = [v for v, _ in vs if (v or "all") in cal]
    rel_rows = 1 if cal_views else 0
    height = max(4.5, 3.3 * (nrows + rel_rows) + 1.2)
    fig, all_axes = plt.subplots(nrows + rel_rows, ncols, figsize=(7, height), squeeze=False)
    axes = all_axes[:nrows]
    if rel_rows:
        rel = list(all_axes[nrows])
        for ax in rel[len(cal_views):]:
            ax.axis("off")
        for ax, v in zip(rel, cal_views):
            _reliability_panel(ax, LABELS.get(v, v) if v else "", cal[v or "all"])
    flat = [ax for row in axes for ax in row]
    for ax in flat[len(flat_cohorts):]:
        ax.axis("off")
    for ax, (name, c) in zip(flat, flat_cohorts):
        _panel(ax, name, c)
    for row in axes:
        row[0].set_ylabel("conditional MRR", fontsize=8)
    k = result.get("settings", {}).get("k", {"files": 10, "tools": 3})
    fig.legend(handles=[Patch(facecolor=BRAINBOX_COLOR, edgecolor=BRAINBOX_COLOR,
                              label="BrainBox"),
                        Patch(facecolor="white", edgecolor=BASELINE_COLOR, hatch="///",
                              label="strongest baseline (named under each probe)")],
               loc="upper center", ncol=2, fontsize=8, frameon=False,
               bbox_to_anchor=(0.5, 1.0))
    caption = (f"Conditional MRR: mean reciprocal rank of the targets (files MRR@{k['files']}, "
               f"tools MRR@{k['tools']}) over eligible targets only,\nthose seen in an earlier "
               "task (the eligible share is of all gold targets). n: trajectories with a "
               "scored target.\nWhiskers: 95% bootstrap intervals of each MRR, resampling whole "
               "trajectories.")
    fig.text(0.5, 0.008, caption, ha="center", va="bottom", fontsize=7, linespacing=1.3)
    # margins in inches, whatever the height: the three-line caption below (it ran into the
    # last row's probe labels on the five-row, two-view figure of the dev set), the legend
    fig.tight_layout(rect=(0, 0.6 / height, 1, 1 - 0.3 / height))
    return fig


def figure(result: dict, path: str):
    """Figure 4 of the paper for this result, saved to ``path`` (a ``.png`` at 200 dpi
    also gets the ``.svg`` beside it); returns the paths written, or ``False`` when
    matplotlib is missing."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    import matplotlib.pyplot as plt

    fig = draw(result)
    paths = [path]
    if path.lower().endswith(".png"):
        paths.append(path[:-4] + ".svg")
    try:
        for p in paths:
            fig.savefig(p, dpi=200)
    finally:
        plt.close(fig)
    return paths
