#!/usr/bin/env python3
"""CPU profile of one process as a flame graph PNG plus a top-N self-time table.

    bench/profile.py --pid P --seconds S --out X.png --title T [--fp] [--data PATH]

Records with `perf record -e cpu-clock` (this host has no hardware counters, so the software
clock is the only sampling event), folds `perf script`'s stacks here in Python and draws the
flame graph with matplotlib: no external flamegraph tool to install. Next to X.png it writes
X.md, the top self-time symbols. `bench/run --profile` imports this module.

Stacks: Sluice is built with debuginfo and without frame pointers, so its user-space stacks need
DWARF unwinding (`--call-graph dwarf`: perf copies 8 KiB of stack per sample and unwinds it
afterwards). A JVM's JIT'd code has no DWARF, so for Kafka `--fp` records frame-pointer stacks
(`-g`); bench/run starts Kafka with -XX:+PreserveFramePointer when it profiles, and asks the JVM
for /tmp/perf-<pid>.map (`jcmd <pid> Compiler.perfmap`) after the recording so that perf names
the JIT'd methods; interpreter frames and anything without a symbol stay "[unknown]".
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

FREQ_HZ = 499  # not a multiple of the 100/250/1000 Hz kernel ticks, so no lock-step aliasing
DWARF_STACK_BYTES = 8192
MAX_DEPTH = 96  # frames kept per stack (root side); deeper recursion adds nothing readable


def perf_bin():
    return shutil.which("perf") or "/usr/bin/perf"


def perf_usable():
    """None if perf can record here, else the reason it cannot (missing binary, or the kernel
    refusing perf_event_open)."""
    if not os.path.exists(perf_bin()):
        return "perf not installed (apt-get install linux-perf)"
    try:
        p = subprocess.run([perf_bin(), "record", "-e", "cpu-clock", "-o", "/dev/null", "-q",
                            "--", "true"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"perf record failed to run: {e}"
    if p.returncode != 0:
        return "perf record refused: " + (p.stderr.strip().splitlines() or ["?"])[-1]
    return None


class Recording:
    """One `perf record` attached to a running process, stopped with SIGINT."""

    def __init__(self, pid, data, fp=False, freq=FREQ_HZ):
        self.pid, self.data, self.fp = pid, Path(data), fp
        self.data.parent.mkdir(parents=True, exist_ok=True)
        graph = ["-g"] if fp else ["--call-graph", f"dwarf,{DWARF_STACK_BYTES}"]
        # -B -N: no build-id pass over the data at the end of the recording, which took ~8 CPU s
        # (inside the measured phase) for an 8 s DWARF recording of Sluice
        self.cmd = [perf_bin(), "record", "-e", "cpu-clock", "-F", str(freq), *graph, "-B", "-N",
                    "-p", str(pid), "-o", str(self.data), "-q"]
        self.log = open(self.data.with_suffix(".log"), "w")
        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(self.cmd, stdout=self.log, stderr=subprocess.STDOUT)
        self.seconds = None
        self.perf_cpu_s = None

    def stop(self):
        """SIGINT (perf writes its data and exits), reaped with wait4 to get perf's own CPU
        seconds: the cost of profiling, reported beside the figures. Idempotent."""
        if self.seconds is not None:
            return self.proc.returncode
        self.seconds = time.monotonic() - self.t0
        if self.proc.returncode is None:
            try:
                self.proc.send_signal(signal.SIGINT)
            except ProcessLookupError:
                pass
            deadline = time.monotonic() + 60
            while True:
                try:
                    pid, status, ru = os.wait4(self.proc.pid, os.WNOHANG)
                except ChildProcessError:  # reaped already (the profiled process had exited)
                    self.proc.returncode = self.proc.returncode or 0
                    break
                if pid:
                    self.proc.returncode = os.waitstatus_to_exitcode(status)
                    self.perf_cpu_s = ru.ru_utime + ru.ru_stime
                    break
                if time.monotonic() > deadline:
                    self.proc.kill()
                deadline_hit = time.monotonic() > deadline + 5
                if deadline_hit:
                    break
                time.sleep(0.05)
        self.log.close()
        return self.proc.returncode


def jvm_perfmap(pid):
    """Asks a running JVM (17+) to write /tmp/perf-<pid>.map, perf's symbol file for JIT'd code."""
    jcmd = shutil.which("jcmd")
    if not jcmd:
        return False
    try:
        return subprocess.run([jcmd, str(pid), "Compiler.perfmap"], capture_output=True,
                              timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


# ---------------------------------------------------------------- folding

_HASH = re.compile(r"::h[0-9a-f]{16}$")  # legacy Rust mangling's hash suffix


def short_name(sym):
    """A readable frame name: no Rust hash, no offsets, generic arguments collapsed."""
    sym = _HASH.sub("", sym)
    sym = re.sub(r"\+0x[0-9a-f]+$", "", sym)
    # `<T as Trait>::f` keeps its shape; long generic argument lists are noise in a flame graph
    for _ in range(4):
        new = re.sub(r"<([^<>]{60,})>", "<…>", sym)
        if new == sym:
            break
        sym = new
    return sym


def _thread_group(comm):
    """Thread name with its number dropped, so that e.g. Kafka's 8 request handler threads make
    one root frame (the per-thread split is not what a profile here is for)."""
    return re.sub(r"[-_ ]?\d+$", "", comm) or comm


def fold(data):
    """`perf script` → Counter of (thread, frames root→leaf) tuples and a set of kernel frames.
    Each frame is 'name' and kernel frames are recorded in the returned set by name."""
    cmd = [perf_bin(), "script", "-i", str(data), "-F", "comm,tid,ip,sym,dso", "--no-inline"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                         errors="replace", bufsize=1 << 20)
    stacks = Counter()
    kernel = set()
    comm, frames = None, []

    def flush():
        if comm is None:
            return
        chain = [_thread_group(comm)] + [f for f in reversed(frames)][:MAX_DEPTH]
        stacks[tuple(chain)] += 1

    for line in p.stdout:
        if not line.strip():
            flush()
            comm, frames = None, []
            continue
        if line[0] not in " \t":
            flush()
            # header: "comm  tid" (comm may contain spaces; tid is the last field)
            head = line.rstrip("\n").rsplit(None, 1)
            comm, frames = head[0].strip() if len(head) == 2 else line.strip(), []
            continue
        # stack line: "\t    addr sym+off (dso)"
        s = line.strip()
        parts = s.split(None, 1)
        if len(parts) < 2:
            continue
        rest = parts[1]
        dso = ""
        if rest.endswith(")") and " (" in rest:
            rest, dso = rest.rsplit(" (", 1)
            dso = dso[:-1]
        name = short_name(rest.strip())
        if name in ("[unknown]", ""):
            base = os.path.basename(dso) if dso and dso != "[unknown]" else ""
            if base.startswith("perf-") and base.endswith(".map"):
                base = "JIT code, no name in the map"  # a JVM stub or since-recompiled method
            name = f"[{base}]" if base else "[unknown]"
        if dso.startswith("[kernel") or dso.startswith("[guest.kernel"):
            kernel.add(name)
        frames.append(name)
    flush()
    p.wait()
    return stacks, kernel


def summarize(stacks, kernel):
    total = sum(stacks.values())
    kern = sum(n for st, n in stacks.items() if len(st) > 1 and st[-1] in kernel)
    self_time = Counter()
    for st, n in stacks.items():
        self_time[st[-1] if len(st) > 1 else "[no stack]"] += n
    return dict(samples=total, kernel_samples=kern,
                kernel_pct=100.0 * kern / total if total else 0.0,
                user_pct=100.0 * (total - kern) / total if total else 0.0,
                top=self_time.most_common(25))


# ---------------------------------------------------------------- drawing

def _tree(stacks):
    root = {"n": 0, "kids": {}}
    for st, n in stacks.items():
        node = root
        node["n"] += n
        for f in st:
            node = node["kids"].setdefault(f, {"n": 0, "kids": {}})
            node["n"] += n
    return root


def _color(name, kernel, depth):
    import zlib
    h = zlib.crc32(name.encode()) % 1000 / 1000.0
    if depth == 0:
        return (0.55, 0.55, 0.6)
    if name in kernel:
        return (0.95, 0.55 + 0.25 * h, 0.15)  # kernel: orange
    if name.startswith("["):
        return (0.72, 0.72, 0.72)  # no symbol: grey
    return (0.35 + 0.2 * h, 0.6 + 0.25 * h, 0.85 - 0.2 * h)  # user: blue-green


def render(stacks, kernel, out_png, title, min_frac=0.002):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    total = sum(stacks.values())
    root = _tree(stacks)
    rects = []  # (x, depth, w, name)

    def walk(node, x, depth):
        for name, kid in sorted(node["kids"].items()):
            w = kid["n"] / total
            if w >= min_frac:
                rects.append((x, depth, w, name))
                walk(kid, x, depth + 1)
            x += w

    if total:
        walk(root, 0.0, 0)
    depth_max = max((r[1] for r in rects), default=0) + 1
    width_in = 18.0
    row_in = 0.2
    fig = plt.figure(figsize=(width_in, 1.0 + row_in * depth_max), dpi=90)
    ax = fig.add_axes([0.005, 0.01, 0.99, 1.0 - 0.8 / (1.0 + row_in * depth_max)])
    ax.set_xlim(0, 1)
    ax.set_ylim(0, depth_max)
    ax.axis("off")
    chars_per_unit = width_in * 90 / 6.2  # ~6.2 px per character at fontsize 7 and dpi 90
    for x, d, w, name in rects:
        ax.add_patch(Rectangle((x, d), w, 0.95, facecolor=_color(name, kernel, d),
                               edgecolor="white", linewidth=0.3))
        fit = int(w * chars_per_unit) - 1
        if fit >= 4:
            label = name if len(name) <= fit else name[:fit - 1] + "…"
            ax.text(x + 0.002, d + 0.47, label, fontsize=7, va="center", ha="left",
                    clip_on=True, family="DejaVu Sans Mono", parse_math=False)
    s = summarize(stacks, kernel)
    fig.suptitle(f"{title} — {s['samples']:,} samples (cpu-clock), kernel {s['kernel_pct']:.1f} % / "
                 f"user {s['user_pct']:.1f} %   (orange: kernel, blue-green: user, grey: no symbol; "
                 f"bottom row: thread)", fontsize=10, parse_math=False)
    fig.savefig(out_png)
    plt.close(fig)
    _shrink(out_png)
    return s


def _shrink(png):
    """256-colour palette PNG: a flame graph has few colours, and the file is ~3x smaller
    (the PNGs are committed next to the reports)."""
    try:
        from PIL import Image
        with Image.open(png) as im:
            small = im.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT)
        small.save(png, optimize=True)
    except (ImportError, OSError, AttributeError):
        pass  # the RGBA PNG stays


def write_table(summary, out_md, title, n=25):
    total = summary["samples"] or 1
    lines = [f"# {title}: top {n} self-time symbols", "",
             f"{summary['samples']:,} samples (perf cpu-clock), kernel {summary['kernel_pct']:.1f} %, "
             f"user {summary['user_pct']:.1f} %.", "",
             "| # | self % | samples | symbol |", "|---:|---:|---:|---|"]
    for i, (sym, cnt) in enumerate(summary["top"][:n], 1):
        safe = sym.replace("|", "\\|")
        lines.append(f"| {i} | {100.0 * cnt / total:.1f} | {cnt:,} | `{safe}` |")
    Path(out_md).write_text("\n".join(lines) + "\n")


def process(data, out_png, title, keep_data=False):
    """perf.data → PNG + .md; returns the summary (samples, kernel/user %, top self-time)."""
    stacks, kernel = fold(data)
    summary = render(stacks, kernel, out_png, title)
    write_table(summary, Path(out_png).with_suffix(".md"), title)
    if not keep_data:
        for p in (Path(data), Path(data).with_suffix(".log")):
            try:
                p.unlink()
            except OSError:
                pass
    summary["png"] = str(out_png)
    summary["png_bytes"] = os.path.getsize(out_png)
    summary["top"] = [[s, n] for s, n in summary["top"]]
    return summary


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--seconds", type=float, required=True)
    ap.add_argument("--out", required=True, help="flame graph PNG; the table goes to <out>.md")
    ap.add_argument("--title", default=None)
    ap.add_argument("--fp", action="store_true", help="frame-pointer stacks (-g), e.g. a JVM")
    ap.add_argument("--jvm", action="store_true", help="a JVM: --fp plus jcmd Compiler.perfmap")
    ap.add_argument("--data", help="perf.data path (default: next to --out, deleted afterwards)")
    ap.add_argument("--keep-data", action="store_true")
    a = ap.parse_args()
    why = perf_usable()
    if why:
        print(f"profile: cannot profile: {why}", file=sys.stderr)
        return 2
    out = Path(a.out)
    data = Path(a.data) if a.data else out.with_suffix(".perf.data")
    rec = Recording(a.pid, data, fp=a.fp or a.jvm)
    try:
        time.sleep(a.seconds)
    except KeyboardInterrupt:
        pass
    rc = rec.stop()
    if a.jvm:
        jvm_perfmap(a.pid)
    if not data.exists():
        print(f"profile: perf record exited {rc} without data (see {data.with_suffix('.log')})",
              file=sys.stderr)
        return 1
    s = process(data, out, a.title or f"pid {a.pid}", keep_data=a.keep_data)
    print(f"profile: {s['samples']} samples, kernel {s['kernel_pct']:.1f} %, {out} "
          f"({s['png_bytes']} bytes), table {out.with_suffix('.md')}")
    for sym, n in s["top"][:5]:
        print(f"  {100.0 * n / max(1, s['samples']):5.1f} %  {sym}")
    return 0 if s["samples"] > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
