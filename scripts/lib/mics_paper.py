"""The MiCS paper's study (PVLDB 16, arXiv 2205.00119) run with micsim sweeps; see reproduce-mics-paper."""
import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MICSIM = os.path.join(ROOT, "build", "micsim")
OUT = os.path.join(ROOT, "build", "mics-paper")

# Workload -> node counts (8 GPUs per node): p3dn 16-128 GPUs, p4d 16-512 GPUs (the paper's ranges).
WORKLOADS = [
    ("bert-10b-p3dn", [2, 4, 8, 16]), ("bert-15b-p3dn", [2, 4, 8, 16]), ("bert-20b-p3dn", [2, 4, 8, 16]),
    ("bert-50b-p3dn", [2, 4, 8, 16]), ("roberta-10b-p3dn", [2, 4, 8, 16]), ("gpt2-10b-p3dn", [2, 4, 8, 16]),
    ("bert-10b-p4d", [2, 4, 8, 16, 32, 64]), ("bert-15b-p4d", [2, 4, 8, 16, 32, 64]),
    ("bert-20b-p4d", [2, 4, 8, 16, 32, 64]), ("bert-50b-p4d", [2, 4, 8, 16, 32, 64]),
    ("roberta-10b-p4d", [2, 4, 8, 16, 32, 64]), ("gpt2-10b-p4d", [2, 4, 8, 16, 32, 64]),
]
STRATEGIES = "zero3,mics,zero2"
# The abstract's throughput and scaling-efficiency claims come from 16-128 GPU experiments
# (training-results.csv rows mics-abstract-speedup / -scaling); larger runs are reported apart.
PAPER_MAX_GPUS = 128  # ratios are relative to the first: DeepSpeed ZeRO-3, the paper's baseline

CLAIMS = {
    "throughput": 2.89,   # "system throughput of MiCS is up to 2.89x that of state-of-the-art large model training systems"
    "efficiency": 1.27,   # "near-linear scaling efficiency, which is up to 1.27x that of DeepSpeed"
    "weak_512": 0.994,    # "100 billion parameters on 512 GPUs with 99.4% weak-scaling efficiency"
    "peak": 0.545,        # "saturate over 54.5% theoretical computation power of each GPU"
}


def sweep(name, nodes, engine, strategies=STRATEGIES):
    path = os.path.join(ROOT, "scenarios", "mics-paper", name + ".yaml")
    out = os.path.join(OUT, name + ".json")
    cmd = [MICSIM, "sweep", path, "--vary", "cluster.nodes=" + ",".join(map(str, nodes)), "--vary",
           "strategy.kind=" + strategies, "--weak", "--engine", engine, "--json", out, "--csv", os.path.join(OUT, name + ".csv"), "-q"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"micsim sweep failed for {name}:\n{r.stderr}")
    with open(out, encoding="utf-8") as f:
        return json.load(f)


def rows_by(data):
    table = {}
    for row in data["rows"]:
        v = row["values"]
        table[(int(v["cluster.nodes"]) * 8, v["strategy.kind"])] = row
    return table


def fmt_row(row):
    if row["status"] != "ok":
        reason = row["status"]
        return f"{'-':>10}{'-':>9}{'-':>8}   {reason[:60]}"
    r = row["result"]
    eff = row["scaling_efficiency"]
    return f"{r['samples_per_s']:>10.1f}{r['tflops_per_gpu']:>9.1f}{100 * eff:>7.1f}%"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--engine", default="analytic", choices=["analytic", "simgrid"])
    a = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    t0 = time.time()
    best_ratio = (0, "")
    best_eff = (0, "")
    beyond = [0, ""]
    summary = []
    for name, nodes in WORKLOADS:
        data = sweep(name, nodes, a.engine)
        t = rows_by(data)
        gpus = sorted({g for g, _ in t})
        print(f"\n== {name}: weak scaling, micro-batch 8 x 8 accumulation steps per GPU ({a.engine} engine)")
        print(f"{'GPUs':>6} | {'MiCS samples/s  TFLOPS  scaling':<36}| {'ZeRO-3 samples/s  TFLOPS  scaling':<36}| "
              f"{'ZeRO-2':<28}| MiCS/ZeRO-3")
        for g in gpus:
            m, z, z2 = t[(g, "mics")], t[(g, "zero3")], t[(g, "zero2")]
            ratio = m["result"]["samples_per_s"] / z["result"]["samples_per_s"] if m["status"] == "ok" and z["status"] == "ok" else None
            r2 = f"{z2['result']['samples_per_s']:>10.1f} samples/s" if z2["status"] == "ok" else (
                "does not fit" if "fit" in z2["status"] else "invalid")
            print(f"{g:>6} | {fmt_row(m):<36}| {fmt_row(z):<36}| {r2:<28}| {f'{ratio:.2f}x' if ratio else '-'}")
            if ratio and ratio > best_ratio[0] and g <= PAPER_MAX_GPUS:
                best_ratio = (ratio, f"{name} at {g} GPUs")
            if ratio and g > PAPER_MAX_GPUS and ratio > beyond[0]:
                beyond[0], beyond[1] = ratio, f"{name} at {g} GPUs"
        # Scaling-efficiency ratio at the largest scale (within the paper's range) where both ran.
        both = [g for g in gpus if t[(g, "mics")]["status"] == "ok" and t[(g, "zero3")]["status"] == "ok" and g <= PAPER_MAX_GPUS]
        if len(both) >= 2:
            g = both[-1]
            em, ez = t[(g, "mics")]["scaling_efficiency"], t[(g, "zero3")]["scaling_efficiency"]
            # Efficiencies relative to the same (smallest common) GPU count.
            base = both[0]
            em = (t[(g, "mics")]["result"]["samples_per_s"] / g) / (t[(base, "mics")]["result"]["samples_per_s"] / base)
            ez = (t[(g, "zero3")]["result"]["samples_per_s"] / g) / (t[(base, "zero3")]["result"]["samples_per_s"] / base)
            summary.append((name, base, g, em, ez))
            if em / ez > best_eff[0]:
                best_eff = (em / ez, f"{name}, {base} -> {g} GPUs (MiCS {100 * em:.1f} %, ZeRO-3 {100 * ez:.1f} %)")
        subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "scripts", "plot"), os.path.join(OUT, name + ".json"), "--out",
                        os.path.join(OUT, name)], check=True, capture_output=True)

    # The 100B model on 128 -> 512 GPUs: the headline claim, simulated with the SimGrid engine (the
    # analytic engine's one-pass interference estimate can read +-2 % here, the size of the effect).
    data = sweep("gpt-100b-p4d", [16, 32, 64], "simgrid", "mics")
    rows = sorted((r for r in data["rows"] if r["status"] == "ok"), key=lambda r: r["result"]["world_size"])
    print("\n== gpt-100b-p4d (100B-class GPT, MiCS p = 128): weak scaling (simgrid engine)")
    for r in rows:
        x = r["result"]
        print(f"{x['world_size']:>6} GPUs  {x['samples_per_s']:>8.2f} samples/s  {x['tflops_per_gpu']:>6.1f} TFLOPS/GPU  "
              f"MFU {100 * x['mfu']:.1f} %  HFU {100 * x['hfu']:.1f} %  scaling {100 * r['scaling_efficiency']:.1f} %")
    subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "scripts", "plot"), os.path.join(OUT, "gpt-100b-p4d.json"), "--out",
                    os.path.join(OUT, "gpt-100b-p4d")], check=True, capture_output=True)
    big = rows[-1]
    weak = big["scaling_efficiency"]
    mfu, hfu = big["result"]["mfu"], big["result"]["hfu"]

    print("\n== The paper's claims beside micsim's predictions")
    def verdict(ok):
        return "agrees" if ok else "disagrees"
    print(f"  (claims on 16-{PAPER_MAX_GPUS} GPUs, the paper's range for them)")
    print(f"  throughput up to {CLAIMS['throughput']}x DeepSpeed ZeRO-3: micsim's largest MiCS/ZeRO-3 ratio is "
          f"{best_ratio[0]:.2f}x ({best_ratio[1]}) -> {verdict(1.0 < best_ratio[0] <= CLAIMS['throughput'] * 1.1)} "
          f"({'within' if best_ratio[0] <= CLAIMS['throughput'] else 'above'} the paper's maximum)")
    print(f"  scaling efficiency up to {CLAIMS['efficiency']}x DeepSpeed's: micsim's largest ratio is {best_eff[0]:.2f}x "
          f"({best_eff[1]}) -> {verdict(abs(best_eff[0] - CLAIMS['efficiency']) <= 0.1 * CLAIMS['efficiency'])}"
          f" ({100 * (best_eff[0] / CLAIMS['efficiency'] - 1):+.0f} %)")
    for name, base, g, em, ez in summary:
        print(f"      {name:<18} {base:>3} -> {g:>3} GPUs: MiCS {100 * em:5.1f} %, ZeRO-3 {100 * ez:5.1f} %, ratio {em / ez:.2f}x")
    if beyond[0]:
        print(f"  beyond the paper's range (p4d to 512 GPUs): MiCS/ZeRO-3 up to {beyond[0]:.2f}x ({beyond[1]}); no published figure to compare")
    print(f"  100B model, 99.4 % weak-scaling efficiency at 512 GPUs: micsim {100 * weak:.1f} % (128 -> 512 GPUs) -> "
          f"{verdict(abs(weak - CLAIMS['weak_512']) <= 0.02)}")
    print(f"  over 54.5 % of peak per GPU: micsim MFU {100 * mfu:.1f} % (6N + attention, no recompute), HFU {100 * hfu:.1f} % "
          f"(with recompute) -> {verdict(mfu >= CLAIMS['peak'] - 0.03 or hfu >= CLAIMS['peak'])} "
          f"(the paper's FLOP convention is not published; the 100B architecture is assumed)")
    print(f"\n  tables, JSON, CSV and plots: {os.path.relpath(OUT, ROOT)}/   ({time.time() - t0:.1f} s)")


if __name__ == "__main__":
    main()
