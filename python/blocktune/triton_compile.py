# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 the blocktune authors
"""blocktune's Triton compile pool: compiles @triton.jit kernels to CUBINs for a named target, many
at once, for the C engine (docs/triton.md says the protocol and why it is shaped so).

    python3 -m blocktune.triton_compile [--workers N]   serve: JSON lines in on stdin, out on stdout
    python3 -m blocktune.triton_compile --probe         one JSON line: is Triton here, which version

Serving, this process is a dispatcher: it says hello, imports Triton and its compiler once, then
forks N worker processes from itself (default one per core; each starts with Triton imported),
hands each queued request to an idle worker, and writes each answer as one line the moment it is
ready (in completion order; the request's "id" comes back). Where forking is not safe (Triton
could not be imported here, or the import left a thread running) the workers are new Python
processes (`--serve`) that import Triton themselves, as is every worker that replaces one.
It reads stdin without ever blocking on a worker or on stdout, so a client may write all its
requests before it reads any answer. A worker that dies answers its request with kind "crashed"
and one that runs past the request's timeout_s is killed and answers "timeout"; either is
replaced. At end of input the pool finishes what is queued and exits 0.

The first line out is a hello: {"ready": true, "protocol": 1, "triton_version": ..., "workers": N,
"files": [...]} (the files that say which Triton this is: a client may remember the version and
trust it while they are unchanged) or, where Triton cannot be imported, {"ready": false, "error":
{"kind": "no_triton", ...}} and exit status 3. Every worker has Triton and its compiler imported
before its first request; with --events, the line {"event": "workers_ready", "workers": N,
"seconds": S, "forked": F} (no "id"; F: the workers were forked from the dispatcher) follows
when the first N have said so. At end of
input, once every request is answered, the workers are ended at once (one still importing Triton
is not waited for).
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import threading
import time

PROTOCOL = 1
EXIT_NO_TRITON = 3


def write_line(stream, lock, obj):
    with lock:
        stream.write(json.dumps(obj, sort_keys=True) + "\n")
        stream.flush()


def triton_version():
    """(version, files, None) or (None, None, why): without importing Triton (that is the
    workers' job). files: what changes when another Triton is installed (its __init__.py and
    its distribution's METADATA), and this python."""
    import importlib.metadata
    import importlib.util
    try:
        spec = importlib.util.find_spec("triton")
        if spec is None:
            raise ImportError
        dist = importlib.metadata.distribution("triton")
        files = [os.path.realpath(sys.executable)]
        if spec.origin:
            files.append(os.path.realpath(spec.origin))
        meta = getattr(dist, "_path", None)  # the .dist-info folder, where the standard one
        if meta is not None and os.path.isfile(os.path.join(str(meta), "METADATA")):
            files.append(os.path.realpath(os.path.join(str(meta), "METADATA")))
        return dist.version, files, None
    except (ImportError, importlib.metadata.PackageNotFoundError, ValueError):
        return None, None, (f"the Python package 'triton' is not importable by {sys.executable} "
                            "(pip install triton, or point blocktune at a python3 that has it)")


# ---- a worker: one process, one request at a time ------------------------------------------

def serve():
    """Answer requests from stdin on a private copy of stdout; fd 1 itself goes to stderr, so
    nothing Triton or a tool it runs prints can break the protocol."""
    proto = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    lock = threading.Lock()
    try:  # Triton, its compiler and back end imported now, before any request comes
        from blocktune import triton_job
        triton_job.preload()
    except Exception as e:  # reported per request, so the client learns why
        triton_job, why = None, f"{type(e).__name__}: {e}"
    write_line(proto, lock, {"worker_ready": True})  # the dispatcher's, not forwarded
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
        except ValueError as e:
            write_line(proto, lock, {"id": None, "ok": False, "cached": False,
                                     "error": {"kind": "bad_request", "message": f"not JSON: {e}"}})
            continue
        if triton_job is None:
            ans = {"id": req.get("id") if isinstance(req, dict) else None, "ok": False,
                   "cached": False, "error": {"kind": "internal", "message": why}}
        else:
            ans = triton_job.answer(req)
        write_line(proto, lock, ans)
    return 0


# ---- the dispatcher ------------------------------------------------------------------------

class Forked:
    """A worker forked from the dispatcher, with the part of subprocess.Popen's interface the pool
    uses: poll() says what wait() saw when it reaped it."""

    def __init__(self):
        to_r, to_w = os.pipe()      # its stdin
        from_r, from_w = os.pipe()  # its stdout
        pid = os.fork()
        if pid == 0:  # the worker: the two pipe ends as stdin and stdout, nothing else inherited
            rc = 1
            try:
                become_child(to_r, from_w)
                rc = serve()
            finally:
                os._exit(rc)
        os.close(to_r)
        os.close(from_w)
        self.pid, self.returncode, self.reaping = pid, None, threading.Lock()
        self.stdin = os.fdopen(to_w, "w", buffering=1)
        self.stdout = os.fdopen(from_r, "r")

    def poll(self):
        return self.returncode

    def wait(self):
        with self.reaping:  # collect() and close() may both wait
            if self.returncode is None:
                _, status = os.waitpid(self.pid, 0)
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def kill(self):
        if self.returncode is None:  # not reaped: the pid is still this worker's
            try:
                os.kill(self.pid, 9)
            except ProcessLookupError:
                pass


def release_inherited():
    """Points every descriptor above stderr at /dev/null (in a forked process: the other
    workers' pipes, the parent's files and sockets), so that none of them is held open by this
    process; the numbers stay taken, so an object of the parent's that closes its descriptor
    when it is collected here cannot close one of ours that reused the number."""
    try:
        fds = sorted(int(f) for f in os.listdir("/proc/self/fd"))
    except OSError:
        fds = range(3, 1024)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in fds:
        if fd > 2 and fd != null:
            try:
                os.dup2(null, fd, inheritable=False)
            except OSError:
                pass
    os.close(null)


_parent_streams = []  # in a forked process: its parent's stream objects, never collected here


def become_child(stdin_fd, stdout_fd):
    """In a forked process: stdin_fd and stdout_fd become its standard input and output, every
    other descriptor above stderr is released (release_inherited), and sys.stdin, stdout and
    stderr are new objects over 0, 1 and 2. The parent's stream objects are kept, never
    collected, so nothing they had buffered is ever written here."""
    os.dup2(stdin_fd, 0)
    os.dup2(stdout_fd, 1)
    _parent_streams.append((sys.stdin, sys.stdout, sys.stderr))
    release_inherited()
    sys.stdin = open(0, "r", closefd=False)
    sys.stdout = open(1, "w", closefd=False)
    sys.stderr = open(2, "w", buffering=1, closefd=False)


def fork_ready():
    """Imports Triton, its compiler and back end here (what every worker does before its first
    request), so that workers forked from this process start with them: True when that worked
    and this process is still one thread (forking a process with other threads is not safe)."""
    try:
        from blocktune import triton_job
        triton_job.preload()
    except Exception:  # the workers import it themselves and report why, per request
        return False
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return threading.active_count() == 1


class Worker:
    def __init__(self, env, fork=False):
        self.proc = Forked() if fork else subprocess.Popen(
            [sys.executable, "-m", "blocktune.triton_compile", "--serve"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, env=env, text=True, bufsize=1)
        self.job = None        # (id, timeout_s or None, start time) of the request it runs
        self.timed_out = False
        self.answered = 0
        self.ready = False     # said worker_ready (Triton imported)


class Pool:
    def __init__(self, n, out, events=False, fork=False, t0=None):
        self.n, self.out, self.events, self.forked = n, out, events, fork
        self.t0 = time.monotonic() if t0 is None else t0
        self.n_ready = 0        # workers that said worker_ready
        self.out_lock = threading.Lock()
        self.cv = threading.Condition()
        self.queue = collections.deque()
        self.eof = False
        pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        self.env = dict(os.environ)
        self.env["PYTHONPATH"] = os.pathsep.join(
            p for p in (pkg_parent, self.env.get("PYTHONPATH")) if p)
        self.silent_deaths = 0  # workers that died before answering anything
        self.unsent = 0         # answers decided but not yet written (dispatch waits for them)
        self.workers = []
        # forked all at once, before this process starts a thread; a worker that replaces one
        # later is spawned
        with self.cv:
            self.workers = [Worker(self.env, fork) for _ in range(n)]
            for w in self.workers:
                self.collect_from(w)

    def start_worker(self):
        return self.collect_from(Worker(self.env))

    def collect_from(self, w):
        threading.Thread(target=self.collect, args=(w,), daemon=True).start()
        return w

    def emit(self, text):
        """One answer line out. A client that has gone (a closed pipe) ends the pool."""
        try:
            with self.out_lock:
                self.out.write(text if text.endswith("\n") else text + "\n")
                self.out.flush()
        except (OSError, ValueError):
            for w in self.workers:
                if w:
                    w.proc.kill()
            os._exit(1)

    def collect(self, w):
        """Forward w's answers; when w ends, answer its request for it and replace it."""
        for line in w.proc.stdout:
            if not w.ready and line.startswith('{"worker_ready"'):
                w.ready = True
                with self.cv:
                    self.n_ready += 1
                    all_ready = self.n_ready == self.n
                if all_ready and self.events:
                    self.emit(json.dumps({"event": "workers_ready", "workers": self.n,
                                          "forked": self.forked,
                                          "seconds": round(time.monotonic() - self.t0, 4)}))
                continue
            self.emit(line)
            with self.cv:
                w.job = None
                w.answered += 1
                self.cv.notify_all()
        rc = w.proc.wait()
        lost = None
        with self.cv:
            if w.job is not None:
                rid, timeout, start = w.job
                if w.timed_out:
                    err = {"kind": "timeout",
                           "message": f"compile ran past timeout_s = {timeout} s and was killed"}
                else:
                    how = f"signal {-rc}" if rc < 0 else f"exit status {rc}"
                    err = {"kind": "crashed", "message": f"the compile worker died ({how}) "
                           "while compiling this request; its stderr says more"}
                lost = {"id": rid, "ok": False, "cached": False, "error": err}
                self.unsent += 1
            if w.answered == 0 and w.job is None:  # died idle before any answer: cannot start
                self.silent_deaths += 1
            if w in self.workers:
                # Replace it, unless input is done or workers keep dying before any answer
                # (then dispatch() answers what is queued rather than respawn forever).
                replace = not (self.eof and not self.queue) and self.silent_deaths <= 2 * self.n
                self.workers[self.workers.index(w)] = self.start_worker() if replace else None
            self.cv.notify_all()
        if lost:
            self.emit(json.dumps(lost))
            with self.cv:
                self.unsent -= 1
                self.cv.notify_all()

    def submit(self, line):
        try:
            req = json.loads(line)
        except ValueError as e:
            self.emit(json.dumps({"id": None, "ok": False, "cached": False,
                                  "error": {"kind": "bad_request", "message": f"not JSON: {e}"}}))
            return
        rid = req.get("id") if isinstance(req, dict) else None
        timeout = req.get("timeout_s") if isinstance(req, dict) else None
        if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
            timeout = None
        with self.cv:
            self.queue.append((rid, timeout, json.dumps(req)))
            self.cv.notify_all()

    def dispatch(self):
        """Hand queued requests to idle workers, kill workers past their time-out; return when
        input has ended and every request is answered. Nothing blocking runs under the lock,
        so the stdin reader (submit) never waits on a worker or on stdout."""
        while True:
            out, sends = [], []
            with self.cv:
                now = time.monotonic()
                for w in self.workers:
                    if w and w.job and w.job[1] and now - w.job[2] > w.job[1] and not w.timed_out:
                        w.timed_out = True
                        w.proc.kill()
                if not any(self.workers):
                    while self.queue:
                        out.append({"id": self.queue.popleft()[0], "ok": False, "cached": False,
                                    "error": {"kind": "internal", "message":
                                              "no compile worker could start (each died before "
                                              "answering; their stderr says why)"}})
                idle = [w for w in self.workers if w and w.job is None and w.proc.poll() is None]
                while idle and self.queue:
                    w = idle.pop()
                    rid, timeout, text = self.queue.popleft()
                    w.job = (rid, timeout, time.monotonic())
                    sends.append((w, text))
                busy = any(w and w.job for w in self.workers)
                done = self.eof and not self.queue and not busy and not self.unsent
                if not (out or sends or done):
                    self.cv.wait(timeout=0.2)
            for ans in out:
                self.emit(json.dumps(ans))
            for w, text in sends:
                try:
                    w.proc.stdin.write(text + "\n")
                    w.proc.stdin.flush()
                except OSError:  # it died meanwhile: collect() answers for it
                    pass
            if done:
                return

    def close(self):
        """Every request is answered: the workers are idle (or still importing), so they are
        ended rather than waited for."""
        for w in self.workers:
            if w:
                w.proc.kill()
        for w in self.workers:
            if w:
                w.proc.wait()


def run_pool(n, events=False):
    t0 = time.monotonic()
    out = sys.stdout
    version, files, why = triton_version()
    lock = threading.Lock()
    if version is None:
        write_line(out, lock, {"ready": False, "protocol": PROTOCOL,
                               "error": {"kind": "no_triton", "message": why}})
        return EXIT_NO_TRITON
    # the hello first (the client learns Triton's version now), then Triton imported once here
    write_line(out, lock, {"ready": True, "protocol": PROTOCOL, "triton_version": version,
                           "workers": n, "files": files})
    pool = Pool(n, out, events, fork=fork_ready(), t0=t0)
    dispatcher = threading.Thread(target=pool.dispatch)
    dispatcher.start()
    for line in sys.stdin:
        if line.strip():
            pool.submit(line)
    with pool.cv:
        pool.eof = True
        pool.cv.notify_all()
    dispatcher.join()
    pool.close()
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m blocktune.triton_compile",
                                 description="Compile @triton.jit kernels to CUBINs for blocktune "
                                 "(JSON lines on stdin and stdout; docs/triton.md).")
    ap.add_argument("--workers", type=int, default=0,
                    help="worker processes (default 0: one per core)")
    ap.add_argument("--probe", action="store_true",
                    help="print whether Triton is importable and its version, then exit")
    ap.add_argument("--events", action="store_true",
                    help="say when every worker has imported Triton (a line with no id)")
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.serve:
        return serve()
    if a.probe:
        version, _, why = triton_version()
        print(json.dumps({"ok": version is not None, "protocol": PROTOCOL,
                          "triton_version": version, "python": sys.version.split()[0],
                          **({"error": {"kind": "no_triton", "message": why}} if why else {})},
                         sort_keys=True))
        return 0 if version else EXIT_NO_TRITON
    if a.workers < 0:
        ap.error("--workers must be >= 0")
    return run_pool(a.workers or os.cpu_count() or 1, a.events)


if __name__ == "__main__":
    sys.exit(main())
