"""Summaries, tables (text and Markdown), plots and BENCHMARKS.md for
bench/run.py. Every ratio is peer time / colio time, the median of the
per-round ratios of interleaved runs: above 1 colio is faster."""

from __future__ import annotations

import os
import re
import shutil
import statistics

WORKLOAD_NAMES = {1: "Large local read", 2: "Fan-out with latency", 3: "Writes",
                  4: "Small reads", 5: "First call", 6: "Remote reads"}
EVEN = 1.03  # a ratio under this is "not ahead": behind (< 1) or even (within 3 %)


def _stats(xs):
    m = statistics.median(xs)
    return {"median": m, "min": min(xs), "max": max(xs), "n": len(xs),
            "spread_pct": 100 * (max(xs) - min(xs)) / 2 / m if m else 0.0}


def summarize(res):
    behind = []
    for c in res["cases"]:
        cs = c["samples"][c["colio"]]
        c["colio_stats"] = _stats(cs)
        c["ratios"] = {}
        for label, m in c["peers"].items():
            if m not in c["samples"]:
                continue
            ps = c["samples"][m]
            if len(ps) == len(cs):
                r = [p / q for p, q in zip(ps, cs)]
            else:  # not paired: ratio of medians
                r = [statistics.median(ps) / statistics.median(cs)]
            st = _stats(r)
            c["ratios"][label] = {"peer": _stats(ps), "ratio": st}
            if st["median"] < EVEN:
                name = f"{c['group']}, {c['case']}" if c.get("group") else c["case"]
                behind.append({"workload": c["workload"], "case": name, "peer": label,
                               "ratio": round(st["median"], 3),
                               "verdict": "behind" if st["median"] < 1 else "even"})
        if c.get("ideal"):
            c["over_ideal"] = c["colio_stats"]["median"] / c["ideal"]
    res["not_ahead"] = behind
    return res


# ---------------------------------------------------------------------------
# formatting


def fmt_time(v, unit):
    if unit == "ns":
        return f"{v:,.0f} ns"
    if v >= 1:
        return f"{v:.2f} s"
    if v >= 1e-3:
        return f"{v * 1e3:.3g} ms" if v < 0.1 else f"{v * 1e3:.0f} ms"
    return f"{v * 1e6:.0f} us"


def colio_cell(c):
    st = c["colio_stats"]
    s = f"{fmt_time(st['median'], c['unit'])} ±{st['spread_pct']:.0f}%"
    if c.get("bytes") and c["unit"] == "s":
        s += f", {c['bytes'] / st['median'] / 1e9:.2f} GB/s"
    return s


def ratio_cell(c, label):
    if label in c.get("errors", {}) or c["peers"].get(label) in c.get("errors", {}):
        return "failed*"
    r = c["ratios"].get(label)
    if r is None:
        return ""
    st = r["ratio"]
    return f"{_ratio(st['median'])} ±{st['spread_pct']:.0f}%"


def _ratio(v):
    return f"{v:.2f}" if v >= 0.1 else f"{v:.3f}"


def _groups(res):
    out = {}
    for c in res["cases"]:
        out.setdefault((c["workload"], c["title"]), []).append(c)
    return out


def _columns(cases):
    cols = []
    for c in cases:
        for label in c["peers"]:
            if label not in cols:
                cols.append(label)
    return cols


def _rows(cases):
    cols = _columns(cases)
    has_ideal = any(c.get("ideal") for c in cases)
    head = ["case", "colio"] + cols + (["ideal", "colio/ideal"] if has_ideal else [])
    rows = []
    for c in cases:
        row = [c["case"], colio_cell(c)] + [ratio_cell(c, k) for k in cols]
        if has_ideal:
            row += [fmt_time(c["ideal"], c["unit"]) if c.get("ideal") else "",
                    f"{c['over_ideal']:.2f}" if c.get("ideal") else ""]
        rows.append(row)
    return head, rows


def _errors(cases):
    seen = {}
    for c in cases:
        for k, v in c.get("errors", {}).items():
            seen[k] = v
    return seen


def text(res):
    out = ["", "colio against its peers: each peer column is peer time / colio time "
               "(median of interleaved rounds, ± half its range); above 1 colio is faster."]
    for (w, title), cases in _groups(res).items():
        head, rows = _rows(cases)
        widths = [max(len(str(r[i])) for r in [head] + rows) for i in range(len(head))]
        out.append(f"\n{w}. {title}")
        for r in [head] + rows:
            out.append("  " + "  ".join(str(x).ljust(widths[i]) for i, x in enumerate(r)))
        for k, v in _errors(cases).items():
            out.append(f"  * {k}: {v}")
        notes = [f"{c['case']}: {c['note']}" for c in cases if c.get("note")]
        if notes and w == 2:
            out.append("  " + "; ".join(notes[:4]) + ("; ..." if len(notes) > 4 else ""))
    if res.get("crossover"):
        out.append("\n" + "\n".join(crossover_text(res["crossover"])))
    out.append("\n" + "\n".join(not_ahead_text(res)))
    out.append("\n" + machine_text(res))
    return "\n".join(out)


def crossover_text(x, md=False):
    sizes = [r["size"] for r in x["ratios"]["read"]["sync"]]
    head = ["pool / inline"] + [f"{s >> 10} KiB" for s in sizes]
    rows = []
    for op in ("read", "write"):
        for pat in ("sync", "fanout"):
            rows.append([f"{op} {pat}"] + [f"{r['pool_over_inline']:.2f}"
                                           for r in x["ratios"][op][pat]])
    lines = []
    if md:
        lines += ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
        lines.append("")
    else:
        lines.append(f"4b. Inline vs pool crossover ({x['count']} requests per run, Go; "
                     "pool time / inline time, below 1 the pool wins)")
        widths = [max(len(r[i]) for r in [head] + rows) for i in range(len(head))]
        lines += ["  " + "  ".join(v.ljust(widths[i]) for i, v in enumerate(r))
                  for r in [head] + rows]
    for op, v in x["verdict"].items():
        lines.append(("" if md else "  ") + (
            f"{op}: the threshold that loses least fan-out time here is "
            f"{v['best_threshold'] >> 10} KiB (loss {v['best_cost']:.2f}); the default, "
            f"{v['default_threshold'] >> 10} KiB, loses {v['default_cost']:.2f}: "
            + ("it follows the measurement" if v["defaults_follow"] else
               "it DOES NOT follow the measurement")) + ("  " if md else ""))
    return lines


def not_ahead_text(res, md=False):
    na = res.get("not_ahead", [])
    if not na:
        return ["colio is ahead of every peer in every case."]
    lines = [("**" if md else "") + f"Where colio is not ahead ({len(na)} comparisons; "
             f"ratio < {EVEN}: behind below 1, even from 1 to {EVEN}):" + ("**" if md else "")]
    for b in na:
        lines.append(("- " if md else "  - ") + f"{b['workload']}. {b['case']} vs {b['peer']}: "
                     f"{_ratio(b['ratio'])} ({b['verdict']})")
    return lines


def machine_text(res, md=False):
    if res.get("runs"):  # merged: each run's own line
        return ("\n\n" if md else "\n").join(
            f"Workloads {', '.join(str(w) for w in r['workloads'])}: "
            + machine_text({"machine": r["machine"], "quick": res.get("quick")}, md)
            for r in res["runs"])
    m = res["machine"]
    # Busy means other processes took CPU time during the run. A high load
    # average before it only says earlier work was still winding down.
    busy = m["cpu_others_pct"] > 10
    s = (f"Machine: {m['nproc']} CPUs ({m['cpu_model']}), {m['memory_gib']} GiB, Linux "
         f"{m['kernel']}, Python {m['python']}, colio {m['colio']}; {m['date']}. "
         f"Load average before: {' / '.join(str(x) for x in m['load_before'])} (1/5/15 min); "
         f"during the run: mean {m['load_during_mean']}, max {m['load_during_max']} "
         f"(the benchmark's own threads count in it). Other processes used "
         f"{m['cpu_others_pct']}% of the CPUs during the run, steal {m['cpu_steal_pct']}%. "
         f"Run time {m['wall_s']} s" + (" (--quick)." if res.get("quick") else "."))
    if busy:
        s += (" NOTE: the machine was busy with other work during this run (other engineers' "
              "builds); ratios hold better than absolute times.")
    return s


def markdown(res, plot_names=()):
    out = []
    for (w, title), cases in _groups(res).items():
        head, rows = _rows(cases)
        out.append(f"### {w}. {title}\n")
        out.append("| " + " | ".join(head) + " |")
        out.append("|" + " --- |" * len(head))
        for r in rows:
            out.append("| " + " | ".join(str(x) for x in r) + " |")
        out.append("")
        for k, v in _errors(cases).items():
            out.append(f"\\* {k}: {v}\n")
        notes = [f"{c['case']}: {c['note']}" for c in cases if c.get("note")]
        if notes:
            out.append("Notes: " + "; ".join(notes) + ".\n")
        if w == 4 and res.get("crossover"):
            out.append(f"Inline vs pool crossover ({res['crossover']['count']} requests per run, "
                       "the Go engine; pool time / inline time, below 1 the pool wins):\n")
            out += crossover_text(res["crossover"], md=True)
            out.append("")
        for p in plot_names:
            if p.startswith(f"w{w}"):
                out.append(f"![{WORKLOAD_NAMES[w]}](docs/bench/{p})\n")
    out += not_ahead_text(res, md=True)
    out.append("")
    out.append(machine_text(res, md=True))
    return "\n".join(out)


def brief(res, jpath):
    m = res["machine"]
    na = res.get("not_ahead", [])
    behind = sum(1 for b in na if b["verdict"] == "behind")
    lines = [f"bench{' --quick' if res.get('quick') else ''}: {len(res['cases'])} cases in "
             f"{m['wall_s']} s ({', '.join(f'{k}: {v} s' for k, v in res['timings_s'].items())});"
             f" colio behind in {behind}, even in {len(na) - behind} of "
             f"{sum(len(c['ratios']) for c in res['cases'])} comparisons; "
             f"results in {os.path.relpath(jpath)}"]
    if res.get("crossover"):
        bad = [op for op, v in res["crossover"]["verdict"].items() if not v["defaults_follow"]]
        if bad:
            lines.append(f"  note: default inline thresholds off the measured crossover for "
                         f"{', '.join(bad)} (noisy in --quick)")
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# plots


def plot(res, outdir):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("bench: matplotlib is not installed (pip install '.[bench]'): no plots")
        return []
    os.makedirs(outdir, exist_ok=True)
    plt.rcParams.update({"font.size": 8, "figure.dpi": 80})
    groups = _groups(res)
    files = []

    def save(fig, name):
        p = os.path.join(outdir, name)
        fig.tight_layout()
        fig.savefig(p)
        plt.close(fig)
        files.append(p)

    by_w = {}
    for (w, _), cases in groups.items():
        by_w.setdefault(w, []).extend(cases)

    if 1 in by_w:
        cases = by_w[1]
        fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
        for ax, temp in zip(axes, ("warm", "cold")):
            rows = {}
            for c in cases:
                if not c["case"].startswith(temp):
                    continue
                for m, xs in c["samples"].items():
                    rows[m] = c["bytes"] / statistics.median(xs) / 1e9
            names = list(rows)
            ax.barh(names, [rows[n] for n in names],
                    color=["tab:blue" if n.startswith("colio") else "tab:gray" for n in names])
            ax.invert_yaxis()
            ax.set_title(f"{temp} page cache")
            ax.set_xlabel("GB/s (higher is better)")
        save(fig, "w1-large-read.png")

    if 2 in by_w:
        cases = by_w[2]
        shapes = list(dict.fromkeys(c["title"] for c in cases))
        fig, axes = plt.subplots(1, len(shapes), figsize=(5 * len(shapes), 3.8))
        axes = axes if len(shapes) > 1 else [axes]
        for ax, title in zip(axes, shapes):
            lines = {}
            ideal = {}
            for c in cases:
                if c["title"] != title:
                    continue
                lat = c["case"].split(",")[0]
                kind = c["case"].split(", ")[1]
                for m, xs in c["samples"].items():
                    label = m if kind != "HTTP" or "HTTP" in m else m + " (HTTP)"
                    lines.setdefault(label, {})[lat] = statistics.median(xs) * 1e3
                if c.get("ideal"):
                    ideal[lat] = c["ideal"] * 1e3
            lats = list(ideal)
            for label, pts in lines.items():
                style = "-" if "colio" in label or "eager" in label else "--"
                ax.plot(lats, [pts.get(x) for x in lats], style, marker="o", label=label,
                        linewidth=2 if "colio" in label else 1)
            ax.plot(lats, [ideal[x] for x in lats], ":", color="black", label="ideal")
            ax.set_yscale("log")
            ax.set_xlabel("latency per read")
            ax.set_ylabel("ms (lower is better)")
            ax.set_title(title.split(", ")[1].split(" (")[0] if ", " in title else title)
        axes[-1].legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0))
        save(fig, "w2-fanout.png")

    if 3 in by_w:
        cases = by_w[3]
        fig, ax = plt.subplots(figsize=(8, 3.2))
        methods = []
        for c in cases:
            for label in ["colio", *c["peers"]]:
                if label not in methods:
                    methods.append(label)
        width = 0.8 / len(methods)
        for i, label in enumerate(methods):
            ys = []
            for c in cases:
                m = c["colio"] if label == "colio" else c["peers"].get(label)
                ys.append(statistics.median(c["samples"][m]) * 1e3 if m else 0)
            ax.bar([j + i * width for j in range(len(cases))], ys, width, label=label)
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(cases))])
        ax.set_xticklabels([c["case"] for c in cases], fontsize=7)
        ax.set_yscale("log")
        ax.set_ylabel("ms (lower is better)")
        ax.legend(fontsize=7)
        save(fig, "w3-writes.png")

    if 4 in by_w:
        cases = by_w[4]
        fig, axes = plt.subplots(1, 2, figsize=(10, 3.4))
        rows = {}
        for c in cases:
            for m, xs in c["samples"].items():
                rows[m] = statistics.median(xs)
        names = list(rows)
        axes[0].barh(names, [rows[n] for n in names],
                     color=["tab:gray" if "pread" in n else "tab:blue" for n in names])
        axes[0].invert_yaxis()
        axes[0].set_xlabel("ns per 4 KiB read (lower is better)")
        x = res.get("crossover")
        if x:
            for op in ("read", "write"):
                for pat in ("sync", "fanout"):
                    rs = x["ratios"][op][pat]
                    axes[1].plot([r["size"] >> 10 for r in rs],
                                 [r["pool_over_inline"] for r in rs], marker="o",
                                 label=f"{op} {pat}")
                thr = x["verdict"][op]["default_threshold"] >> 10
                axes[1].axvline(thr, linestyle=":", color="gray")
                axes[1].text(thr, 0.02, f" {op} default", rotation=90, fontsize=6,
                             transform=axes[1].get_xaxis_transform())
            axes[1].axhline(1, color="black", linewidth=0.8)
            axes[1].set_xscale("log", base=2)
            axes[1].set_xlabel("request size, KiB")
            axes[1].set_ylabel("pool time / inline time (< 1: pool wins)")
            axes[1].legend(fontsize=7)
        save(fig, "w4-small-reads.png")

    if 5 in by_w:
        c = by_w[5][0]
        fig, ax = plt.subplots(figsize=(6, 2.6))
        names = list(c["samples"])
        others = [m for m in by_w[5][1]["samples"] if m not in names] if len(by_w[5]) > 1 else []
        names += others
        allsamples = {**by_w[5][0]["samples"], **(by_w[5][1]["samples"] if others else {})}
        ax.barh(names, [statistics.median(allsamples[n]) * 1e3 for n in names],
                color=["tab:blue" if n.startswith("colio") else "tab:gray" for n in names])
        ax.axvline(20, color="red", linestyle=":", label="colio target 20 ms")
        ax.invert_yaxis()
        ax.set_xlabel("ms from import to the first completed read (lower is better)")
        ax.legend(fontsize=7)
        save(fig, "w5-first-call.png")
    return files


# ---------------------------------------------------------------------------
# BENCHMARKS.md

BEGIN, END = "<!-- bench:generated:begin -->", "<!-- bench:generated:end -->"


def publish(res, plots, root):
    dst = os.path.join(root, "docs", "bench")
    os.makedirs(dst, exist_ok=True)
    names = []
    for p in plots:
        shutil.copy(p, os.path.join(dst, os.path.basename(p)))
        names.append(os.path.basename(p))
    md_path = os.path.join(root, "BENCHMARKS.md")
    body = BEGIN + "\n" + markdown(res, names) + "\n" + END
    if os.path.exists(md_path):
        with open(md_path) as f:
            old = f.read()
        if BEGIN in old and END in old:
            new = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: body, old,
                         flags=re.S)
        else:
            new = old.rstrip() + "\n\n" + body + "\n"
    else:
        new = "# Benchmarks\n\n" + body + "\n"
    with open(md_path, "w") as f:
        f.write(new)
