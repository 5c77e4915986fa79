#!/usr/bin/env python3
"""Loads a plan's HTML report in a real browser and checks what it shows.

    check_html_report.py REPORT.html PLAN.json [--measured]
                         [--trace SIMULATED.json] [--browser chromium]

Debian's chromium, headless, loads the page from disk (no network) and
dumps the DOM it rendered; the check then reads every figure the page
marks (id and data-value) and compares it with `cleave inspect --json`:
the step time, throughput, MFU, bubble, tokens per second, the memory of
each stage and of the device, each predicted collective's bytes, one box
per rank on its stage, one timeline box per simulated task, the step of
each of the search's next best plans, each communication stream's busy
time in the simulated step (--trace: as `inspect --trace` writes it), and
(--measured: the page was
written with `inspect --measured TRACE`) a measured timeline. The
browser's console must stay free of errors. Prints one line per check and
exits 1 on any mismatch.
"""
import html.parser
import json
import os
import subprocess
import sys


class Figures(html.parser.HTMLParser):
    """Elements with an id: their attributes; SVG rects per parent id."""

    def __init__(self):
        super().__init__()
        self.by_id = {}
        self.stack = []
        self.rects = {}

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.by_id[attrs["id"]] = attrs
        if tag == "svg":
            self.stack.append(attrs.get("id", ""))
        if tag == "rect" and self.stack:
            self.rects[self.stack[-1]] = self.rects.get(self.stack[-1], 0) + 1

    def handle_endtag(self, tag):
        if tag == "svg" and self.stack:
            self.stack.pop()


def main():
    args = sys.argv[1:]
    browser = "chromium"
    if "--browser" in args:
        i = args.index("--browser")
        browser = args[i + 1]
        del args[i:i + 2]
    measured = "--measured" in args
    if measured:
        args.remove("--measured")
    trace = None
    if "--trace" in args:
        i = args.index("--trace")
        trace = json.load(open(args[i + 1]))
        del args[i:i + 2]
    report, plan_json = args
    facts = json.load(open(plan_json))
    url = "file://" + os.path.abspath(report)
    done = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu",
         "--no-first-run", "--enable-logging=stderr", "--v=0",
         "--dump-dom", url],
        capture_output=True, text=True, timeout=120)
    failures = []

    def check(name, ok, detail=""):
        print(("ok   " if ok else "FAIL ") + name + (": " + detail if detail
                                                     else ""))
        if not ok:
            failures.append(name)

    check("the browser rendered the page", done.returncode == 0 and
          "<body" in done.stdout, f"exit {done.returncode}")
    console = [line for line in done.stderr.splitlines()
               if "CONSOLE" in line or "Uncaught" in line]
    check("no console errors", not console, "; ".join(console[:3]))
    dom = Figures()
    dom.feed(done.stdout)

    def same(element_id, expected):
        attrs = dom.by_id.get(element_id)
        if attrs is None:
            check(element_id, False, "not in the rendered page")
            return
        shown = float(attrs.get("data-value", "nan"))
        ok = abs(shown - expected) <= 1e-9 * max(1.0, abs(expected))
        check(element_id, ok, f"{shown!r} against the JSON's {expected!r}")

    predicted = facts.get("predicted", {})
    for element_id, key in (("step-time", "step_time_s"),
                            ("tflops-per-device", "tflops_per_device"),
                            ("mfu", "mfu"), ("bubble", "bubble_fraction"),
                            ("tokens-per-s", "tokens_per_s")):
        same(element_id, predicted[key])
    same("num-parameters", facts["model"]["num_parameters"])
    same("device-memory", facts["cluster"]["memory_bytes"])
    for stage in facts["stages"]:
        same(f"memory-stage-{stage['stage']}", stage["predicted_peak_bytes"])
        for rank in stage["ranks"]:
            attrs = dom.by_id.get(f"rank-{rank}", {})
            check(f"rank-{rank} on stage {stage['stage']}",
                  attrs.get("data-stage") == str(stage["stage"]))
    for i, c in enumerate(facts["collectives"]["predicted"]):
        same(f"collective-{i}", c["bytes"])
    timeline = dom.by_id.get("timeline")
    check("the timeline has a box per simulated task",
          timeline is not None and
          dom.rects.get("timeline", 0) > 0 and
          dom.rects.get("timeline", 0) <=
          int(timeline.get("data-events", "0")),
          f"{dom.rects.get('timeline', 0)} boxes")
    if trace is not None:
        # The communication streams' busy time, summed from the simulated
        # step `inspect --trace` writes.
        names, busy = {}, {}
        for e in trace["traceEvents"]:
            key = (e.get("pid", 0), e.get("tid", 0))
            if e.get("ph") == "M" and e.get("name") == "thread_name":
                names[key] = e["args"]["name"]
            elif e.get("ph") == "X":
                busy[key] = busy.get(key, 0.0) + e.get("dur", 0.0)
        streams = [k for k in busy if names.get(k, "compute") != "compute"]
        check("communication streams in the simulated step", bool(streams),
              f"{len(streams)}")
        for pid, tid in streams:
            same(f"comm-time-{pid}-{tid}", busy[(pid, tid)] * 1e-6)
    for i, a in enumerate(predicted.get("alternatives", [])):
        same(f"alternative-{i}-step", a["step_time_s"])
    if measured:
        check("the measured timeline has boxes",
              dom.rects.get("measured-timeline", 0) > 0,
              f"{dom.rects.get('measured-timeline', 0)} boxes")
    knobs = dom.by_id.get("knobs")
    check("the knobs", knobs is not None)
    print(f"{len(failures)} check(s) failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
