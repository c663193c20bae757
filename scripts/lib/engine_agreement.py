"""The analytic engine beside the SimGrid engine on scenarios where collectives contend (scripts/bench engines).

Both engines run the same prepared step with jitter off (a calibration file in a temporary directory sets
calibration.compute.jitter_cv 0), so what differs is only how each moves bytes: the analytic engine with
its tier calendar and two-stream sharing (docs/model.md 6.2), SimGrid with every flow on the cluster's
links shared max-min fairly. Prints SimGrid's step time and (SimGrid / analytic - 1) per scenario, then
the mean |difference|, the largest and the mean signed difference. Nothing is asserted here.
"""
import os
import statistics
import tempfile

from mics_paper import FRAMEWORK as DEEPSPEED_2021, ROOT, simulate


def cases():
    """MiCS paper workloads on 16 nodes (both frameworks), two DeepSpeed-2021 what-ifs, GPT-175B on 64 p4d."""
    out = []
    for model in ["bert-10b", "bert-15b", "bert-20b", "roberta-10b", "gpt2-10b"]:
        for inst in ["p3dn", "p4d"]:
            path = os.path.join(ROOT, "scenarios", "mics-paper", f"{model}-{inst}.yaml")
            for kind in ["mics", "zero3"]:
                for fw, sets in [("deepspeed-2021", DEEPSPEED_2021), ("ideal", ["strategy.framework=ideal"])]:
                    out.append((f"{model}-{inst} {kind} {fw}", path,
                                ["cluster.nodes=16", "strategy.kind=" + kind, "training.grad_accumulation_steps=4"] + sets))
    p3dn = os.path.join(ROOT, "scenarios", "mics-paper", "bert-10b-p3dn.yaml")
    base = ["cluster.nodes=16", "training.grad_accumulation_steps=4"] + DEEPSPEED_2021
    out.append(("bert-10b-p3dn zero3 ds, no device sync", p3dn, base + ["strategy.kind=zero3", "strategy.mechanisms.device_sync=false"]))
    out.append(("bert-10b-p3dn mics p=128 ds", p3dn, base + ["strategy.partition_size=128"]))
    gpt = os.path.join(ROOT, "scenarios", "3d", "gpt-175b-3d-vs-mics.yaml")
    out.append(("gpt-175b 64 p4d mics p=64", gpt, []))
    out.append(("gpt-175b 64 p4d mics p=128", gpt, ["strategy.partition_size=128"]))
    out.append(("gpt-175b 64 p4d zero3", gpt, ["strategy.kind=zero3"]))
    out.append(("gpt-175b 64 p4d hsdp p=64", gpt, ["strategy.kind=hsdp"]))
    return out


def main():
    diffs = []
    with tempfile.TemporaryDirectory() as tmp:
        print(f"{'scenario (jitter off)':44s} {'simgrid s':>10s} {'analytic s':>11s} {'simgrid/analytic-1':>19s}")
        for name, path, sets in cases():
            instance = "p3dn.24xlarge" if "p3dn" in path else "p4d.24xlarge"
            calibration = os.path.join(tmp, instance + ".yaml")
            with open(calibration, "w", encoding="utf-8") as f:
                f.write(f'instance: {instance}\nsource: "what-if: jitter off"\ncompute: {{jitter_cv: 0}}\n')
            sets = sets + ["calibration=" + calibration]
            a, g = (simulate(path, sets, e)["iteration_time_s"] for e in ("analytic", "simgrid"))
            diffs.append(100 * (g / a - 1))
            print(f"{name:44s} {g:10.3f} {a:11.3f} {diffs[-1]:+18.2f} %", flush=True)
    print(f"{len(diffs)} scenarios: mean |difference| {statistics.mean(map(abs, diffs)):.2f} %, "
          f"largest {max(diffs, key=abs):+.2f} %, mean signed {statistics.mean(diffs):+.2f} %")


if __name__ == "__main__":
    main()
