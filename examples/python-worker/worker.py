#!/usr/bin/env python3
"""A Baton task worker in Python, standard library only.

It implements the worker contract of openapi/worker.v1.json (the calls, the envelope, the
transition table, fences, HMAC or token authentication), registers with a scheduler and
heartbeats, reports async outcomes, progress and heartbeats back to it, and keeps its tasks in a
JSON file so that a restart (even kill -9) recovers what it held.

Two task types:
  py.echo   sync: the run answers SUCCESS with {"echo": params} (params.fail: true fails it)
  py.sleep  async: sleeps params.ms milliseconds (default 300) in ticks of params.tick_ms
            (default 100), beating and reporting progress each tick; pausable while running;
            stops on cancel

Settings (environment):
  PORT (0: any free port), HOST (127.0.0.1)
  AUTH_MODE hmac|token, AUTH_SECRET (hmac, 16+ characters), AUTH_TOKEN (token)
  STATE_FILE        where tasks are kept (default: none, tasks live in memory only)
  SCHEDULER_URL     scheduler base URL(s), comma separated: register, heartbeat, callbacks
  WORKER_ID, PUBLIC_URL, WORKER_VERSION, CAPACITY, HEARTBEAT_MS (registration heartbeat)
  BROKEN            makes the worker wrong in one named way, for the conformance kit's own tests

It prints "listening on http://HOST:PORT" once it serves.
"""

import hashlib
import hmac
import json
import os
import re
import secrets
import signal
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# ------------------------------------------------------------------------------------ settings

HOST = os.environ.get("HOST", "127.0.0.1")
PORT = int(os.environ.get("PORT", "0"))
AUTH_MODE = os.environ.get("AUTH_MODE", "hmac")
AUTH_SECRET = os.environ.get("AUTH_SECRET", "")
AUTH_TOKEN = os.environ.get("AUTH_TOKEN", "")
STATE_FILE = os.environ.get("STATE_FILE", "")
SCHEDULER_URLS = [u.strip().rstrip("/") for u in os.environ.get("SCHEDULER_URL", "").split(",") if u.strip()]
WORKER_ID = os.environ.get("WORKER_ID", "")
PUBLIC_URL = os.environ.get("PUBLIC_URL", "")
WORKER_VERSION = os.environ.get("WORKER_VERSION", "0.1.0")
# The worker contract this worker speaks (openapi/worker.v1.json info.version). 1.0.0 plays a
# worker of that version, for the tests of how a scheduler treats one: its registration names no
# contract version, and it never says a run was lost (execution_lost came with 1.1.0).
CONTRACT_VERSION = os.environ.get("CONTRACT_VERSION", "1.2.0")
if CONTRACT_VERSION not in ("1.0.0", "1.2.0"):
    sys.stderr.write(f"CONTRACT_VERSION must be 1.2.0 (or 1.0.0 to play one), not {CONTRACT_VERSION}\n")
    sys.exit(2)
CAPACITY = int(os.environ.get("CAPACITY", "64"))
HEARTBEAT_MS = int(os.environ.get("HEARTBEAT_MS", "2000"))
BROKEN = os.environ.get("BROKEN", "")

MAX_BODY = 1024 * 1024  # bytes; larger bodies are 413
REPLAY_WINDOW_MS = 300_000  # the contract's default replay window
ALIVE_WINDOW_S = 5.0  # an execution that has not beaten for this long is not alive
CALL_TIMEOUT_S = 5.0  # calls to the scheduler

KNOWN_BROKEN = {
    "",
    "content-type",  # accepts any content type
    "fence-header",  # accepts a write without X-Baton-Fence
    "other-type",  # serves a task id held by another type as if it were this type's
    "check-order",  # checks the task type before authentication
    "pause-running",  # pause of a running task answers PAUSE but the run goes on
    "cancel-running",  # cancel of a running task answers FAIL but the run goes on
    "new-attempt",  # a higher attempt over a running one leaves the old run going
    "body-limit",  # no body size limit
    "forget",  # keeps nothing across a restart, whatever STATE_FILE says
    "restart-alive",  # after a restart, says alive for runs that died with the old process
    "lost-alive",  # says execution_lost of runs that are going on
    # What it sends to the scheduler (the kit's worker-side checks):
    "ignore-timing",  # reads the heartbeat interval where the registration answer does not put it
    "stale-fence",  # reports with the fence its run started with, not the highest accepted
    "no-retry",  # sends an outcome once, even when the scheduler answered 5xx
    "retry-409",  # retries an outcome answered 409 as if it were a 5xx
    "log-drop",  # drops a log batch the scheduler answered 5xx
    "sigterm-fail",  # on SIGTERM reports its runs FAIL before it exits
}


def die(message):
    sys.stderr.write(message + "\n")
    sys.exit(2)


if AUTH_MODE not in ("hmac", "token"):
    die(f"AUTH_MODE must be hmac or token, not {AUTH_MODE}")
if AUTH_MODE == "hmac" and len(AUTH_SECRET) < 16:
    die("AUTH_MODE=hmac needs AUTH_SECRET of at least 16 characters")
if AUTH_MODE == "token" and len(AUTH_TOKEN) < 16:
    die("AUTH_MODE=token needs AUTH_TOKEN of at least 16 characters")
if BROKEN not in KNOWN_BROKEN:
    die(f"unknown BROKEN={BROKEN}")

# What each type's params look like (JSON Schema, sent with the registration): the scheduler
# refuses a task whose params break it before calling this worker. The checks below stay, for a
# scheduler that does not read the schemas.
TYPES = {
    "py.echo": {
        "blocking": "sync",
        "pausable_running": False,
        "params_schema": {
            "type": "object",
            "properties": {"fail": {"type": "boolean", "default": False, "description": "fail the run"}},
        },
    },
    "py.sleep": {
        "blocking": "async",
        "pausable_running": True,
        "params_schema": {
            "type": "object",
            "properties": {
                "ms": {"type": "number", "minimum": 0, "default": 300, "description": "how long to sleep"},
                "tick_ms": {"type": "number", "exclusiveMinimum": 0, "default": 100, "description": "progress every"},
            },
        },
    },
}
# Optional calls worth the scheduler's making, per type (told at registration). `prepare` is
# served but not declared: it checks nothing here, so the scheduler skips it. `pause` and
# `continue` declare that a RUNNING task can be paused; before its run every task can be.
COMMON_CALLS = ["rollback", "change", "clean", "progress", "summary", "notify"]


def implements(spec):
    return COMMON_CALLS + (["pause", "continue"] if spec["pausable_running"] else [])

# The contract's transition table: from -> statuses a task may move to.
NEXT = {
    "INIT": ["CREATE", "POSTPONE", "PAUSE", "FAIL"],
    "CREATE": ["PREPARE", "RUNNING", "POSTPONE", "PAUSE", "FAIL", "NONE"],
    "PREPARE": ["RUNNING", "POSTPONE", "PAUSE", "FAIL", "NONE"],
    "POSTPONE": ["CREATE", "PREPARE", "PAUSE", "FAIL", "NONE"],
    "RUNNING": ["SUCCESS", "FAIL", "PAUSE", "CREATE", "NONE"],
    "PAUSE": ["INIT", "CREATE", "PREPARE", "POSTPONE", "RUNNING", "FAIL", "NONE"],
    "SUCCESS": ["FINISH", "ROLLBACK", "CREATE"],
    "FAIL": ["CREATE", "ROLLBACK", "FINISH"],
    "ROLLBACK": ["FINISH"],
    "FINISH": ["CREATE", "ROLLBACK"],
    "NONE": ["CREATE", "FAIL", "FINISH"],
}
NOT_STARTED = ("CREATE", "PREPARE")  # an attempt in these has not begun its run
ENDED = ("SUCCESS", "FAIL", "ROLLBACK", "FINISH")


def now_iso():
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def log(message):
    sys.stderr.write(f"{now_iso()} {message}\n")
    sys.stderr.flush()


# ------------------------------------------------------------------------------------ errors


class ApiError(Exception):
    """A refusal in the contract's error table: code // 100 is the HTTP status."""

    def __init__(self, code, message, data=None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data


def refuse(code, message):
    raise ApiError(code, message)


# ------------------------------------------------------------------------------------ validation
# Request schemas: unknown fields are refused at every level; params and data are free objects.


def _int(lo, hi):
    return {"t": "int", "min": lo, "max": hi}


def _str(pattern=None, lo=None, hi=None, date_time=False):
    return {"t": "str", "pattern": re.compile(pattern) if pattern else None, "min": lo, "max": hi, "dt": date_time}


FREE = {"t": "free"}
CREATE_INFO = {
    "t": "obj",
    "required": ["task_type", "task_name"],
    "props": {
        "task_type": _str(r"^[a-z0-9][a-z0-9._-]{0,99}$"),
        "task_name": _str(lo=1, hi=200),
        "important_level": _int(0, 9),
        "http_url": _str(),
        "parent_task_id": _str(),
        "control_task_id": _str(),
    },
}
PROCESS_ARG = {
    "t": "obj",
    "required": [],
    "props": {
        "start_time": _str(date_time=True),
        "deadline_second": _int(1, 604800),
        "lock_timeout": _int(1, 86400),
        "max_retry": _int(0, 100),
        "task_status": {"t": "enum", "values": ["INIT", "POSTPONE", "PAUSE", "Postpose"]},
    },
}
CREATE_REQ = {
    "t": "obj",
    "required": ["task_id", "create_info"],
    "props": {
        "task_id": _str(r"^[A-Za-z0-9_-]{1,64}$"),
        "attempt": _int(1, 10000),
        "create_info": CREATE_INFO,
        "process_arg": PROCESS_ARG,
        "params": FREE,
        "lock_keys": {"t": "strs"},
    },
}
ACTION_REQ = {"t": "obj", "required": [], "props": {"reason": _str(hi=500)}}
CHANGE_REQ = {"t": "obj", "required": ["params"], "props": {"params": FREE, "reason": _str(hi=500)}}
NOTIFY_REQ = {
    "t": "obj",
    "required": ["event"],
    "props": {
        "event": {"t": "enum", "values": ["cancel", "parent_done", "deadline", "custom"]},
        "message": _str(hi=500),
        "data": FREE,
    },
}
DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$", re.I)


def validate(value, schema, at):
    kind = schema["t"]
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            refuse(40000, f"{at} must be an integer")
        if not schema["min"] <= value <= schema["max"]:
            refuse(40000, f"{at} must be between {schema['min']} and {schema['max']}")
    elif kind == "str":
        if not isinstance(value, str):
            refuse(40000, f"{at} must be a string")
        if schema["pattern"] and not schema["pattern"].match(value):
            refuse(40000, f"{at} must match {schema['pattern'].pattern}")
        if schema["min"] is not None and len(value) < schema["min"]:
            refuse(40000, f"{at} is too short")
        if schema["max"] is not None and len(value) > schema["max"]:
            refuse(40000, f"{at} is too long")
        if schema["dt"] and not DATE_TIME.match(value):
            refuse(40000, f"{at} must be an ISO 8601 date-time")
    elif kind == "enum":
        if value not in schema["values"]:
            refuse(40000, f"{at} must be one of {', '.join(schema['values'])}")
    elif kind == "strs":
        if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
            refuse(40000, f"{at} must be an array of strings")
    elif kind == "free":
        if not isinstance(value, dict):
            refuse(40000, f"{at} must be an object")
    elif kind == "obj":
        if not isinstance(value, dict):
            refuse(40000, f"{at} must be an object")
        for key, item in value.items():
            if key not in schema["props"]:
                refuse(40000, f"{at} has an unknown field {key}")
            validate(item, schema["props"][key], f"{at}.{key}")
        for key in schema["required"]:
            if key not in value:
                refuse(40000, f"{at}.{key} is required")


def _no_constants(name):
    raise ValueError(f"{name} is not JSON")


def parse_json_object(raw, what):
    try:
        body = json.loads(raw.decode("utf-8"), parse_constant=_no_constants)
    except (ValueError, UnicodeDecodeError):
        refuse(40001, f"{what}: the body is not valid JSON")
    if not isinstance(body, dict):
        refuse(40001, f"{what}: the body is not a JSON object")
    return body


# ------------------------------------------------------------------------------------ authentication


def sign(method, path_with_query, timestamp, nonce, fence, body):
    canonical = "\n".join(
        [method.upper(), path_with_query, timestamp, nonce, fence, hashlib.sha256(body).hexdigest()]
    )
    return "v1=" + hmac.new(AUTH_SECRET.encode("utf-8"), canonical.encode("utf-8"), hashlib.sha256).hexdigest()


def auth_headers(method, path_with_query, fence, body):
    """Headers that authenticate a call this worker makes (to the scheduler)."""
    if AUTH_MODE == "token":
        return {"Authorization": f"Bearer {AUTH_TOKEN}"}
    timestamp = str(int(time.time() * 1000))
    nonce = secrets.token_hex(12)
    return {
        "X-Baton-Timestamp": timestamp,
        "X-Baton-Nonce": nonce,
        "X-Baton-Signature": sign(method, path_with_query, timestamp, nonce, fence, body),
    }


class Verifier:
    """Checks the credentials of a call; a signature is accepted once within the replay window."""

    def __init__(self):
        self.seen = {}
        self.lock = threading.Lock()

    def verify(self, method, target, headers, body):
        if AUTH_MODE == "token":
            given = headers.get("Authorization", "")
            if not hmac.compare_digest(given.encode(), f"Bearer {AUTH_TOKEN}".encode()):
                refuse(40100, "missing or wrong bearer token")
            return
        timestamp = headers.get("X-Baton-Timestamp")
        nonce = headers.get("X-Baton-Nonce")
        signature = headers.get("X-Baton-Signature")
        if not timestamp or not nonce or not signature:
            refuse(40100, "missing X-Baton-Timestamp, X-Baton-Nonce or X-Baton-Signature")
        if not re.fullmatch(r"[A-Za-z0-9_-]{16,64}", nonce):
            refuse(40100, "X-Baton-Nonce must be 16-64 characters of [A-Za-z0-9_-]")
        now = int(time.time() * 1000)
        if not re.fullmatch(r"\d{1,15}", timestamp) or abs(now - int(timestamp)) > REPLAY_WINDOW_MS:
            refuse(40102, "signature timestamp outside the replay window")
        fence = headers.get("X-Baton-Fence", "")
        expected = sign(method, target, timestamp, nonce, fence, body)
        if not hmac.compare_digest(signature.encode(), expected.encode()):
            refuse(40101, "signature does not match the request")
        with self.lock:
            for old, at in list(self.seen.items()):
                if now - at > 2 * REPLAY_WINDOW_MS:
                    del self.seen[old]
            if signature in self.seen:
                refuse(40103, "signature already used")
            self.seen[signature] = now


VERIFIER = Verifier()


# ------------------------------------------------------------------------------------ the store
# One lock guards every task and execution. Tasks are written to STATE_FILE (a temporary file
# renamed over it) after every change, before the call is answered: what the scheduler was told
# is what a restarted worker finds.

LOCK = threading.RLock()
TASKS = {}  # task_id -> task record (a dict, as stored)
EXECUTIONS = {}  # task_id -> Execution of the current attempt, only in this process


def save():
    if not STATE_FILE or BROKEN == "forget":
        return
    tmp = f"{STATE_FILE}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump({"tasks": TASKS}, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, STATE_FILE)


def load():
    if not STATE_FILE or BROKEN == "forget" or not os.path.exists(STATE_FILE):
        return
    with open(STATE_FILE, encoding="utf-8") as f:
        TASKS.update(json.load(f)["tasks"])
    in_flight = [t["task_id"] for t in TASKS.values() if t["task_status"] == "RUNNING"]
    # Runs that were going when the old process died are not started again here: only the
    # scheduler starts attempts. They stay RUNNING, answered with alive: false, until the
    # scheduler gives the attempt up (a cancel) or replaces it (a create of a higher attempt).
    log(f"recovered {len(TASKS)} tasks from {STATE_FILE}; {len(in_flight)} runs died with the old process")
    if BROKEN == "restart-alive":
        for task_id in in_flight:
            EXECUTIONS[task_id] = Execution(TASKS[task_id], dead=True)


def view(t):
    keys = [
        "task_id", "task_type", "task_name", "task_status", "attempt", "fence", "create_info",
        "process_arg", "params", "lock_keys", "progress", "heartbeat_at", "result", "error",
        "created_at", "updated_at",
    ]
    return {k: t[k] for k in keys}


def move(t, to):
    if to not in NEXT[t["task_status"]]:
        refuse(40900, f"transition {t['task_status']} -> {to} is not allowed")
    t["task_status"] = to
    t["updated_at"] = now_iso()


def empty_progress():
    return {"percent": 0, "step": None, "message": None, "updated_at": None}


# ------------------------------------------------------------------------------------ runs


class Execution:
    """One run of one attempt of a py.sleep task, on a thread of its own."""

    def __init__(self, t, dead=False):
        self.task_id = t["task_id"]
        self.attempt = t["attempt"]
        self.first_fence = t["fence"]  # only BROKEN=stale-fence reports with it
        params = t["params"]
        self.total_ms = params.get("ms", 300)
        self.tick_ms = params.get("tick_ms", 100)
        self.done_ms = 0
        # The run's own log, shipped to the scheduler in batches (PUT /v1/tasks/{id}/logs).
        self.log_seq = 0
        self.log_pending = []
        self.stopped = False  # cancelled, superseded or ended: the thread writes nothing more
        self.running = threading.Event()  # clear while paused
        self.dead = dead
        if not dead:
            self.running.set()

    def reporting_fence(self, t):
        """The highest fence accepted for the task: a scheduler that took it over raised it."""
        return self.first_fence if BROKEN == "stale-fence" else t["fence"]

    def start(self):
        threading.Thread(target=self.loop, name=f"run-{self.task_id}", daemon=True).start()

    def log(self, level, message):
        self.log_pending.append({"seq": self.log_seq, "at": now_iso(), "level": level, "message": message})
        self.log_seq += 1

    def loop(self):
        last_report = 0.0
        self.log("info", f"sleeping {self.total_ms} ms in ticks of {self.tick_ms} ms")
        while True:
            if not self.running.wait(0.05):
                if self.stopped:
                    return
                continue
            step = min(self.tick_ms, self.total_ms - self.done_ms)
            time.sleep(max(step, 0) / 1000)
            report = None
            with LOCK:
                t = TASKS.get(self.task_id)
                if self.stopped or t is None or EXECUTIONS.get(self.task_id) is not self:
                    return
                if not self.running.is_set():
                    continue  # paused during the sleep: this tick counts when it resumes
                self.done_ms += step
                t["heartbeat_at"] = now_iso()
                self.log("info", f"slept {self.done_ms} of {self.total_ms} ms")
                if self.done_ms >= self.total_ms:
                    self.stopped = True
                    del EXECUTIONS[self.task_id]
                    t["progress"] = {"percent": 100, "step": "done", "message": f"slept {self.total_ms} ms", "updated_at": t["heartbeat_at"]}
                    t["result"] = {"slept_ms": self.total_ms}
                    try:
                        move(t, "SUCCESS")
                    except ApiError:
                        return  # only when BROKEN left a run going that the task moved away from
                    save()
                    completion = {"attempt": t["attempt"], "task_status": "SUCCESS", "result": t["result"]}
                    fence = self.reporting_fence(t)
                    self.log("info", f"done: slept {self.total_ms} ms")
                    break
                percent = min(99, int(self.done_ms * 100 / self.total_ms)) if self.total_ms else 99
                t["progress"] = {"percent": percent, "step": "sleeping", "message": f"{self.done_ms} of {self.total_ms} ms", "updated_at": t["heartbeat_at"]}
                if time.monotonic() - last_report >= 0.5:
                    last_report = time.monotonic()
                    report = ({"attempt": t["attempt"], "percent": percent, "step": "sleeping"}, self.reporting_fence(t))
            if report:
                SCHEDULER.report_progress(self.task_id, *report)
                SCHEDULER.send_logs(self, report[1])
        SCHEDULER.send_logs(self, fence)
        SCHEDULER.report_outcome(self.task_id, completion, fence)


def start_sleep(t):
    params = t["params"]
    ms = params.get("ms", 300)
    tick = params.get("tick_ms", 100)
    ok = lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0  # noqa: E731
    if not ok(ms) or not ok(tick) or tick == 0:
        t["error"] = {"message": "params.ms and params.tick_ms must be non-negative numbers", "code": "bad_params"}
        move(t, "FAIL")
        return
    t["heartbeat_at"] = now_iso()
    execution = Execution(t)
    EXECUTIONS[t["task_id"]] = execution
    execution.start()


def stop_execution(task_id):
    execution = EXECUTIONS.pop(task_id, None)
    if execution:
        execution.stopped = True
        execution.running.set()


# ------------------------------------------------------------------------------------ the calls


def find(task_type, task_id):
    t = TASKS.get(task_id)
    if t is None or (t["task_type"] != task_type and BROKEN != "other-type"):
        refuse(40401, f"task {task_id} of type {task_type} is unknown")
    return t


def check_fence(t, fence):
    if fence < t["fence"]:
        refuse(40901, f"fence {fence} is lower than {t['fence']}, already seen for this task")


def create(task_type, body, fence):
    validate(body, CREATE_REQ, "body")
    if body["create_info"]["task_type"] != task_type:
        refuse(40000, "body.create_info.task_type must equal the task type of the path")
    attempt = body.get("attempt", 1)
    t = TASKS.get(body["task_id"])
    if t is not None and t["task_type"] != task_type:
        refuse(40902, f"task {body['task_id']} exists with type {t['task_type']}")
    if t is not None:
        check_fence(t, fence)
        if attempt <= t["attempt"]:
            # The same (or an older) attempt: answer what is held. A higher fence is kept, so the
            # holder it replaced is refused from now on.
            if fence > t["fence"]:
                t["fence"] = fence
                save()
            return view(t)
        if t["task_status"] not in NOT_STARTED and "CREATE" not in NEXT[t["task_status"]]:
            refuse(40900, f"a new attempt is not allowed from {t['task_status']}")
        if BROKEN != "new-attempt":
            stop_execution(t["task_id"])  # a run of the old attempt stops before the new one exists
    process_arg = dict(body.get("process_arg", {}))
    if process_arg.get("task_status") == "Postpose":
        process_arg["task_status"] = "POSTPONE"
    stamp = now_iso()
    TASKS[body["task_id"]] = {
        "task_id": body["task_id"],
        "task_type": task_type,
        "task_name": body["create_info"]["task_name"],
        "task_status": "CREATE",
        "attempt": attempt,
        "fence": fence,
        "create_info": body["create_info"],
        "process_arg": process_arg,
        "params": body.get("params", {}),
        "lock_keys": body.get("lock_keys", []),
        "progress": empty_progress(),
        "heartbeat_at": None,
        "result": None,
        "error": None,
        "paused_from": None,
        "created_at": t["created_at"] if t else stamp,
        "updated_at": stamp,
    }
    save()
    return view(TASKS[body["task_id"]])


def require_from(t, call, statuses):
    if t["task_status"] not in statuses:
        refuse(40900, f"{call} is not allowed from {t['task_status']}")


def do_notify(t, body):
    if body["event"] not in ("cancel", "deadline"):
        t["updated_at"] = now_iso()
        return
    was = t["task_status"]
    move(t, "FAIL")
    t["error"] = {"message": body.get("message") or f"stopped by {body['event']}", "code": body["event"]}
    if BROKEN == "cancel-running" and was == "RUNNING":
        return
    stop_execution(t["task_id"])  # the scheduler asked for the stop: it is not reported back


def do_running(t, _body):
    require_from(t, "running", NOT_STARTED)
    move(t, "RUNNING")
    t["result"] = None
    t["error"] = None
    t["progress"] = empty_progress()
    if TYPES[t["task_type"]]["blocking"] == "async":
        start_sleep(t)
        return
    t["heartbeat_at"] = now_iso()
    if t["params"].get("fail") is True:
        t["error"] = {"message": "params.fail asked for a failure", "code": "asked"}
        move(t, "FAIL")
    else:
        t["result"] = {"echo": t["params"]}
        t["progress"] = {"percent": 100, "step": "done", "message": None, "updated_at": now_iso()}
        move(t, "SUCCESS")


def do_pause(t, _body):
    require_from(t, "pause", ("CREATE", "PREPARE", "POSTPONE", "RUNNING"))
    if t["task_status"] == "RUNNING" and not TYPES[t["task_type"]]["pausable_running"]:
        refuse(50100, f"{t['task_type']} cannot be paused while running")
    t["paused_from"] = t["task_status"]
    move(t, "PAUSE")
    execution = EXECUTIONS.get(t["task_id"])
    if execution and BROKEN != "pause-running":
        execution.running.clear()


def do_continue(t, _body):
    require_from(t, "continue", ("PAUSE",))
    back = t.get("paused_from") or "CREATE"
    move(t, back)
    t["paused_from"] = None
    if back == "RUNNING":
        execution = EXECUTIONS.get(t["task_id"])
        if execution:
            t["heartbeat_at"] = now_iso()
            execution.running.set()
        # Paused before a restart: nothing runs it any more; it answers alive: false and the
        # scheduler replaces the attempt, as for any run that died with the old process.


def do_prepare(t, _body):
    require_from(t, "prepare", ("CREATE", "POSTPONE"))
    move(t, "PREPARE")


def do_rollback(t, _body):
    require_from(t, "rollback", ("SUCCESS", "FAIL", "FINISH"))
    stop_execution(t["task_id"])
    move(t, "ROLLBACK")  # nothing to undo for echo and sleep


def do_change(t, body):
    if t["task_status"] in ENDED:
        refuse(40900, f"change is not allowed from {t['task_status']}")
    t["params"] = body["params"]  # a run already going keeps the params it started with
    t["updated_at"] = now_iso()


def do_clean(t, _body):
    # A repeated clean (the scheduler's FINISH write was lost) changes nothing (contract 1.2.0).
    if t["task_status"] == "FINISH":
        return
    require_from(t, "clean", ("SUCCESS", "FAIL", "ROLLBACK", "NONE"))
    stop_execution(t["task_id"])
    move(t, "FINISH")


ACTIONS = {
    None: (do_notify, NOTIFY_REQ),
    "running": (do_running, ACTION_REQ),
    "pause": (do_pause, ACTION_REQ),
    "continue": (do_continue, ACTION_REQ),
    "prepare": (do_prepare, ACTION_REQ),
    "rollback": (do_rollback, ACTION_REQ),
    "change": (do_change, CHANGE_REQ),
    "clean": (do_clean, ACTION_REQ),
}


def write(task_type, query, body, fence):
    action = query.get("action")
    call, schema = ACTIONS[action]
    if body is None:
        if action in (None, "change"):
            refuse(40001, f"{action or 'notify'} needs a JSON object body")
        body = {}
    validate(body, schema, "body")
    t = find(task_type, query["task_id"])
    check_fence(t, fence)
    call(t, body)
    t["fence"] = max(t["fence"], fence)  # kept only when the call was accepted
    save()
    return view(t)


def read(task_type, query):
    action = query.get("action")
    task_id = query.get("task_id")
    if action is None:
        name = query.get("task_name")
        if task_id is None and name is None:
            refuse(40000, "query needs task_id and/or task_name")
        items = [
            view(t)
            for t in TASKS.values()
            if t["task_type"] == task_type
            and (task_id is None or t["task_id"] == task_id)
            and (name is None or t["task_name"] == name)
        ]
        return {"items": items}
    if task_id is None:
        refuse(40000, "query parameter task_id is required")
    t = TASKS.get(task_id)
    if t is not None and t["task_type"] != task_type and BROKEN != "other-type":
        t = None
    if action == "status":
        if t is None:
            return {"task_id": task_id, "task_status": "NONE", "attempt": 0}
        return {"task_id": task_id, "task_status": t["task_status"], "attempt": t["attempt"]}
    if action == "heartbeat":
        if t is None:
            return {"task_id": task_id, "alive": False, "task_status": "NONE", "heartbeat_at": None}
        answer = {"task_id": task_id, "alive": is_alive(t), "task_status": t["task_status"], "heartbeat_at": t["heartbeat_at"]}
        execution = EXECUTIONS.get(task_id)
        lost = execution is None or execution.attempt != t["attempt"] or BROKEN == "lost-alive"
        if t["task_status"] == "RUNNING" and lost and CONTRACT_VERSION != "1.0.0":
            # The run died with an earlier process of this worker: nothing will end it here.
            answer["execution_lost"] = True
        return answer
    if t is None:
        refuse(40401, f"task {task_id} of type {task_type} is unknown")
    if action == "progress":
        return {**t["progress"], "task_id": task_id, "task_status": t["task_status"]}
    outcome = f": {t['error']['message']}" if t["error"] else (f": {json.dumps(t['result'])}" if t["result"] else "")
    return {
        "task_id": task_id,
        "task_status": t["task_status"],
        "summary": f"{t['task_type']} attempt {t['attempt']} is {t['task_status']}{outcome}",
        "result": t["result"],
        "error": t["error"],
    }


def is_alive(t):
    """An execution of the current attempt runs in this process and beat within the window."""
    if t["task_status"] != "RUNNING":
        return False
    execution = EXECUTIONS.get(t["task_id"])
    if execution is None or execution.attempt != t["attempt"]:
        return False
    if execution.dead:  # BROKEN=restart-alive: claims a run the old process took with it
        return True
    if not t["heartbeat_at"]:
        return False
    beat = datetime.fromisoformat(t["heartbeat_at"].replace("Z", "+00:00"))
    return (datetime.now(timezone.utc) - beat).total_seconds() <= ALIVE_WINDOW_S


# ------------------------------------------------------------------------------------ HTTP

QUERY_NAMES = {
    "GET": ("task_type", "action", "task_name", "task_id"),
    "PUT": ("task_type", "action", "task_id"),
    "POST": (),
}
ACTION_NAMES = {
    "GET": ("status", "heartbeat", "progress", "summary"),
    "PUT": ("running", "pause", "continue", "prepare", "rollback", "change", "clean"),
}
PATH = re.compile(r"^/v1/task/([^/?]+)$")


def read_query(method, raw_query):
    query = {}
    for key, value in urllib.parse.parse_qsl(raw_query, keep_blank_values=True):
        if key not in QUERY_NAMES[method]:
            refuse(40000, f"unknown query parameter {key}")
        if key in query:
            refuse(40000, f"query parameter {key} given more than once")
        if value == "":
            refuse(40000, f"query parameter {key} must not be empty")
        query[key] = value
    if "action" in query and query["action"] not in ACTION_NAMES[method]:
        refuse(40000, f"query action must be one of {', '.join(ACTION_NAMES[method])}")
    if method == "PUT" and "task_id" not in query:
        refuse(40000, "query parameter task_id is required")
    return query


def handle(method, target, headers, raw):
    """One call, checked in the contract's order; answers data or raises ApiError."""
    path, _, raw_query = target.partition("?")
    match = PATH.match(path)
    if not match or method not in ("GET", "POST", "PUT"):
        refuse(40400, f"no such call: {method} {path}")
    task_type = urllib.parse.unquote(match.group(1))
    if BROKEN == "check-order" and task_type not in TYPES:
        refuse(40400, f"no handler for task type {task_type}")
    if method != "GET":
        content_type = headers.get("Content-Type", "").split(";")[0].strip().lower()
        if (raw or method == "POST") and content_type != "application/json" and BROKEN != "content-type":
            refuse(41500, "the body must be application/json")
    VERIFIER.verify(method, target, headers, raw)
    query = read_query(method, raw_query)
    fence = None
    if method != "GET":
        given = headers.get("X-Baton-Fence", "").strip()
        if re.fullmatch(r"\d{1,15}", given):
            fence = int(given)
        elif BROKEN == "fence-header" and given == "":
            fence = 0
        else:
            refuse(40002, "X-Baton-Fence must be a non-negative integer")
    if task_type not in TYPES:
        refuse(40400, f"no handler for task type {task_type}")
    if "task_type" in query and query["task_type"] != task_type:
        refuse(40000, "query task_type must equal the task type of the path")
    body = parse_json_object(raw, "create" if method == "POST" else "call") if raw else None
    with LOCK:
        if method == "GET":
            return read(task_type, query)
        if method == "POST":
            if body is None:
                refuse(40001, "create needs a JSON object body")
            return create(task_type, body, fence)
        return write(task_type, query, body, fence)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "baton-python-worker"

    def log_message(self, *args):  # one line per call is too much for tests; errors are logged
        pass

    def answer(self, status, envelope):
        text = json.dumps(envelope).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(text)))
        self.end_headers()
        self.wfile.write(text)

    def serve(self):
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length < 0 or self.headers.get("Transfer-Encoding"):
            self.close_connection = True
            return self.answer(400, {"code": 40001, "message": "a body needs a Content-Length", "data": None})
        if length > MAX_BODY and BROKEN != "body-limit":
            # Read (and drop) what was sent, so the client reads this answer rather than a reset;
            # a body far too large is not worth reading: the connection is closed instead.
            self.close_connection = True
            if length <= 16 * MAX_BODY:
                while length > 0:
                    length -= len(self.rfile.read(min(length, 65536)) or b"x" * length)
            return self.answer(413, {"code": 41300, "message": f"body larger than {MAX_BODY} bytes", "data": None})
        raw = self.rfile.read(length) if length else b""
        try:
            data = handle(self.command, self.path, self.headers, raw)
            self.answer(200, {"code": 0, "message": "ok", "data": data})
        except ApiError as err:
            self.answer(err.code // 100, {"code": err.code, "message": err.message, "data": err.data})
        except Exception as err:  # a bug: an error id in the answer, the trace in the log
            error_id = secrets.token_hex(6)
            log(f"error {error_id}: {err!r}")
            self.answer(500, {"code": 50000, "message": f"unexpected error, id {error_id}", "data": None})

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = serve


# ------------------------------------------------------------------------------------ the scheduler


class Scheduler:
    """Registration, heartbeats and callbacks: every call signed, with a fence, to any instance."""

    def __init__(self, urls):
        self.urls = urls
        self.registered = False
        self.heartbeat_s = HEARTBEAT_MS / 1000
        self.last_problem = None  # the last registration problem logged, to log each once

    def call(self, method, path, body, fence):
        raw = json.dumps(body).encode("utf-8")
        last = None
        for base in self.urls:
            prefix = urllib.parse.urlsplit(base).path
            target = prefix + path
            headers = {
                "Content-Type": "application/json",
                "X-Baton-Fence": str(fence),
                "X-Request-Id": secrets.token_hex(8),
                **auth_headers(method, target, str(fence), raw),
            }
            request = urllib.request.Request(base + path, data=raw, method=method, headers=headers)
            try:
                with urllib.request.urlopen(request, timeout=CALL_TIMEOUT_S) as res:
                    return res.status, json.loads(res.read() or b"{}")
            except urllib.error.HTTPError as err:
                try:
                    envelope = json.loads(err.read() or b"{}")
                except ValueError:
                    envelope = {}
                if err.code < 500:
                    return err.code, envelope
                last = (err.code, envelope)
            except (OSError, ValueError) as err:
                last = (0, {"message": str(err)})
        return last

    def register(self):
        body = {
            "worker_id": WORKER_ID,
            "url": PUBLIC_URL,
            "version": WORKER_VERSION,
            **({"contract_version": CONTRACT_VERSION} if CONTRACT_VERSION != "1.0.0" else {}),
            "capacity": CAPACITY,
            "task_types": [
                {
                    "task_type": name,
                    "blocking": spec["blocking"],
                    "implements": implements(spec),
                    "params_schema": spec["params_schema"],
                }
                for name, spec in TYPES.items()
            ],
        }
        status, envelope = self.call("POST", "/v1/workers", body, 0)
        if status == 200:
            self.registered = True
            # The scheduler says how often it wants to hear from the worker; follow it.
            data = envelope.get("data") or {}
            timing = data if BROKEN == "ignore-timing" else data.get("timing") or {}
            interval = timing.get("heartbeat_interval_ms")
            if isinstance(interval, int) and interval > 0:
                self.heartbeat_s = min(HEARTBEAT_MS, interval) / 1000
        elif status != 0 or self.last_problem != envelope.get("message"):
            log(f"registration: {status} {envelope.get('message')}")
        self.last_problem = None if status == 200 else envelope.get("message")

    def beat(self):
        status, envelope = self.call("PUT", f"/v1/workers/{urllib.parse.quote(WORKER_ID, safe='')}/heartbeat", {}, 0)
        if status == 404:
            self.registered = False  # the scheduler forgot this worker: register again
        elif status != 200:
            log(f"heartbeat: {status} {envelope.get('message')}")

    def keep_registered(self):
        retry = 0.1  # while not registered: quick at first (the scheduler may be starting), then 1 s
        while True:
            try:
                self.register() if not self.registered else self.beat()
            except Exception as err:  # never let the heartbeat thread die
                log(f"registration: {err!r}")
            if self.registered:
                retry = 0.1
                time.sleep(self.heartbeat_s)
            else:
                time.sleep(retry)
                retry = min(1.0, retry * 2)

    def report_progress(self, task_id, body, fence):
        """Progress (also a heartbeat): one try; the scheduler polls anyway."""
        if not self.urls:
            return
        status, envelope = self.call("PUT", f"/v1/tasks/{urllib.parse.quote(task_id, safe='')}/progress", body, fence)
        if status not in (200, 409):
            log(f"progress of {task_id}: {status} {envelope.get('message')}")

    def send_logs(self, execution, fence):
        """What the run logged since the last batch that went; kept for the next try when the
        scheduler cannot be reached (a line sent twice is kept once, by its seq)."""
        if not self.urls:
            execution.log_pending.clear()
            return
        while execution.log_pending:
            batch = execution.log_pending[:500]
            path = f"/v1/tasks/{urllib.parse.quote(execution.task_id, safe='')}/logs"
            status, envelope = self.call("PUT", path, {"attempt": execution.attempt, "lines": batch}, fence)
            if status == 200:
                del execution.log_pending[: len(batch)]
            elif 400 <= status < 500 or BROKEN == "log-drop":  # 409: not this attempt's; 404: unknown
                execution.log_pending.clear()
            else:
                return  # kept: the next report sends them again

    def report_outcome(self, task_id, body, fence):
        """The outcome of an async run. 409: another attempt owns the task now, drop it."""
        if not self.urls:
            return
        path = f"/v1/tasks/{urllib.parse.quote(task_id, safe='')}/notify"
        for wait in (None,) if BROKEN == "no-retry" else (0.2, 0.8, 3.2, None):
            status, envelope = self.call("PUT", path, body, fence)
            if status == 200:
                accepted = (envelope.get("data") or {}).get("accepted")
                log(f"outcome of {task_id} attempt {body['attempt']} reported: {'accepted' if accepted else 'known already'}")
                return
            if 400 <= status < 500 and not (status == 409 and BROKEN == "retry-409"):
                # 409: another attempt owns the task now; 404: unknown
                log(f"outcome of {task_id} attempt {body['attempt']} refused: {status} {envelope.get('message')}")
                return
            if wait is None:
                log(f"outcome of {task_id} not reported ({status}); the scheduler's poll will find it")
                return
            time.sleep(wait)


SCHEDULER = Scheduler(SCHEDULER_URLS)


def fail_runs_and_exit(_signum, _frame):
    """BROKEN=sigterm-fail: what a worker must not do on a deploy's SIGTERM (the runs did not
    fail, their process is going; the scheduler recovers them)."""
    with LOCK:
        running = [(e.task_id, TASKS[e.task_id]) for e in EXECUTIONS.values() if e.task_id in TASKS]
    for task_id, t in running:
        completion = {"attempt": t["attempt"], "task_status": "FAIL", "error": {"message": "worker shutting down"}}
        SCHEDULER.report_outcome(task_id, completion, t["fence"])
    os._exit(0)


def main():
    global WORKER_ID, PUBLIC_URL
    with LOCK:
        load()
    server = ThreadingHTTPServer((HOST, PORT), Handler)
    server.daemon_threads = True
    port = server.server_address[1]
    WORKER_ID = WORKER_ID or f"py-worker-{port}"
    PUBLIC_URL = PUBLIC_URL or f"http://{HOST}:{port}"
    if BROKEN == "sigterm-fail":
        signal.signal(signal.SIGTERM, fail_runs_and_exit)
    if SCHEDULER.urls:
        threading.Thread(target=SCHEDULER.keep_registered, name="registration", daemon=True).start()
    print(f"listening on http://{HOST}:{port}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
