"""The run behind an MCP session's notes-file and history tools (docs/mcp.md, Runs).

Those tools take a run credential, as over the REST API, so a session holds a leased top-level
run in the user's assistant thread (``assistant_run_open``): opened on first use, its lease
renewed at every call and by a heartbeat thread while the session lives, finished when the
session ends. Every write still passes the tool's own checks (per-user lock, lease, top-level,
``enable_memory``), which are not repeated here.

A run that someone finished (or that another worker took over) ends the session's use of the
tools: they refuse with that run's error until the client reconnects. A lease that merely
expired because the session was suspended longer than the lease (a sleeping laptop) is not
taken back: that run is finished as failed — only possible when nobody took it over — and the
next call opens a new one.
"""

import logging
import threading
import time
import uuid

from django.db import DatabaseError, connection

from config.errors import DomainError, PermissionDenied
from memory_app.mcp.auth import Principal
from memory_app.mcp.errors import ErrorCode
from memory_app.runs.leases import LeaseLost, RunCredential, run_credential_from_token, without_row
from memory_app.runs.models import RunStatus
from memory_app.runs.services import assistant_run_open, run_finish, run_heartbeat

logger = logging.getLogger(__name__)

LEASE_SECONDS = 60
HEARTBEAT_SECONDS = LEASE_SECONDS / 3


class SessionRunEnded(PermissionDenied):
    """The session's run was finished or taken over; carries that run's error code."""


class SessionRun:
    def __init__(self, principal: Principal, *, lease_seconds: int = LEASE_SECONDS, heartbeat: bool = False):
        self.principal = principal
        self.lease_seconds = lease_seconds
        self.worker_id = f"mcp:{uuid.uuid4().hex}"
        self._lock = threading.RLock()
        self._credential: RunCredential | None = None
        self._ended: SessionRunEnded | None = None
        self._heartbeat = Heartbeat(self, HEARTBEAT_SECONDS * lease_seconds / LEASE_SECONDS) if heartbeat else None

    @property
    def run_id(self) -> str | None:
        return self._credential.run_id if self._credential else None

    @property
    def ended(self) -> bool:
        return self._ended is not None

    def credential(self) -> RunCredential:
        """The run's credential with its lease renewed just now; opens the run on first use."""
        with self._lock:
            if self._ended is not None:
                raise self._ended
            if self._credential is None:
                self._open()
            else:
                self._renew()
            if self._ended is not None:
                raise self._ended
            assert self._credential is not None  # opened or renewed just now, or ended (raised above)
            return self._credential

    def heartbeat(self) -> bool:
        """Renew the lease between calls; False once the run has ended."""
        with self._lock:
            if self._ended is not None:
                return False
            if self._credential is not None:
                try:
                    self._renew()
                except DomainError as exc:  # a new run could not be opened: the next call says why
                    logger.warning("MCP session %s: renewal failed: %s", self.worker_id, exc.code)
                    self._credential = None
            return self._ended is None

    def close(self) -> None:
        """Finish the run (completed) and stop the heartbeat; the session is over."""
        if self._heartbeat is not None:
            self._heartbeat.stop()
        with self._lock:
            credential, self._credential = self._credential, None
            if self._ended is None:
                self._ended = SessionRunEnded("The MCP session has ended.", code=ErrorCode.SESSION_CLOSED)
            if credential is None:
                return
            try:
                run_finish(credential=credential, status=RunStatus.COMPLETED)
            except (DomainError, DatabaseError) as exc:
                # Finished or taken over by someone else, or no database: the lease expires on its own.
                logger.info("MCP session %s: run %s not finished: %s", self.worker_id, credential.run_id, exc)

    def _open(self) -> None:
        issued = assistant_run_open(
            actor=self.principal.actor,
            username=self.principal.user.get_username(),
            worker_id=self.worker_id,
            lease_seconds=self.lease_seconds,
            request_id=f"mcp-{uuid.uuid4().hex}",
        )
        # Kept for the whole session: without the row read now, which would go stale.
        credential = run_credential_from_token(issued.run_token)
        assert credential is not None  # the token was issued just now
        self._credential = without_row(credential)
        logger.info("MCP session %s opened run %s for %s", self.worker_id, issued.run.pk, self.principal.label)
        if self._heartbeat is not None:
            self._heartbeat.start_once()

    def _renew(self) -> None:
        credential = self._credential
        assert credential is not None  # only an open run is renewed
        try:
            run_heartbeat(credential=credential, lease_seconds=self.lease_seconds)
        except LeaseLost:
            # Expired, or taken over? Finishing tells: it accepts an expired lease nobody took over.
            try:
                run_finish(credential=credential, status=RunStatus.FAILED, usage={"mcp": "lease_expired"})
            except DomainError as exc:
                self._end(exc)
                return
            logger.info("MCP session %s: run %s expired while idle; opening a new one", self.worker_id, self.run_id)
            self._credential = None
            self._open()
        except PermissionDenied as exc:  # finished by someone else, or no longer this run's token
            self._end(exc)

    def _end(self, exc: DomainError) -> None:
        logger.info("MCP session %s: run %s ended: %s", self.worker_id, self.run_id, exc.code)
        self._ended = SessionRunEnded(
            f"This session's run has ended: {exc.message} Reconnect the MCP server to start a new one.",
            code=exc.code,
        )


class Heartbeat(threading.Thread):
    """Renews a session's lease every ``interval`` seconds while the session is idle."""

    def __init__(self, session: SessionRun, interval: float):
        super().__init__(name=f"mcp-heartbeat-{session.worker_id}", daemon=True)
        self.session = session
        self.interval = interval
        self._stop_event = threading.Event()
        self._launched = False

    def start_once(self) -> None:
        if not self._launched:
            self._launched = True
            self.start()

    def stop(self) -> None:
        self._stop_event.set()
        if self._launched and self is not threading.current_thread():
            self.join(timeout=10)

    def run(self) -> None:
        while not self._stop_event.wait(self.interval):
            try:
                if not self.session.heartbeat():
                    return
            except DatabaseError as exc:  # the database is away: try again at the next beat
                logger.warning("MCP heartbeat failed: %s", exc.__class__.__name__)
            finally:
                connection.close()  # this thread's own connection; nothing keeps it between beats


class HttpSessionRuns:
    """The runs of the HTTP transport, one per client session and process.

    Streamable HTTP runs stateless: no session id ties two requests together. What does is the
    API token and the user it works for, so a session here is ``(token, actor, user)``: its
    notes-file and history calls share one ``SessionRun`` (one run row, its lease renewed at each
    call) instead of opening and finishing a run per call. A session idle ``idle_seconds`` is
    over: its run is finished (``completed``) by a timer thread, or at the next call of any
    session, or when the server stops; a run someone else ended is answered once with its error,
    then the session's next call opens a new one. Another process or node keeps its own run for
    the same token: at most one run per session and process.
    """

    def __init__(self, *, idle_seconds: float, lease_seconds: int = LEASE_SECONDS):
        self.idle_seconds = idle_seconds
        self.lease_seconds = lease_seconds
        self._lock = threading.Lock()
        self._sessions: dict[tuple, _HttpSession] = {}
        self._reaper: threading.Thread | None = None
        self._stopped = threading.Event()

    @staticmethod
    def key(principal: Principal) -> tuple:
        return (principal.token_id, principal.actor.pk, principal.user.pk)

    def acquire(self, principal: Principal) -> SessionRun:
        """The session's run, marked in use until ``release``."""
        key = self.key(principal)
        with self._lock:
            idle = self._take_idle()
            session = self._sessions.get(key)
            if session is None or session.runs.ended:
                session = self._sessions[key] = _HttpSession(SessionRun(principal, lease_seconds=self.lease_seconds))
            session.in_use += 1
            self._start_reaper()
        self._close(idle)
        return session.runs

    def release(self, principal: Principal) -> None:
        with self._lock:
            session = self._sessions.get(self.key(principal))
            if session is not None:
                session.in_use -= 1
                session.last_used = time.monotonic()

    def close_idle(self) -> int:
        with self._lock:
            idle = self._take_idle()
        self._close(idle)
        return len(idle)

    def close_all(self) -> None:
        self._stopped.set()
        with self._lock:
            every, self._sessions = list(self._sessions.values()), {}
        self._close(every)

    def _take_idle(self) -> list["_HttpSession"]:
        """Sessions idle past ``idle_seconds`` (or whose run ended), removed; the lock is held."""
        now = time.monotonic()
        idle = [
            key
            for key, session in self._sessions.items()
            if session.in_use == 0 and (session.runs.ended or now - session.last_used >= self.idle_seconds)
        ]
        return [self._sessions.pop(key) for key in idle]

    @staticmethod
    def _close(sessions: list["_HttpSession"]) -> None:
        for session in sessions:
            session.runs.close()

    def _start_reaper(self) -> None:
        if self._reaper is None:
            self._reaper = threading.Thread(target=self._reap, name="mcp-http-runs", daemon=True)
            self._reaper.start()

    def _reap(self) -> None:
        while not self._stopped.wait(max(self.idle_seconds / 3, 0.05)):
            try:
                self.close_idle()
            except DatabaseError as exc:  # the database is away: the leases expire on their own
                logger.warning("MCP HTTP runs: closing idle runs failed: %s", exc.__class__.__name__)
            finally:
                connection.close()  # this thread's own connection; nothing keeps it between rounds


class _HttpSession:
    def __init__(self, runs: SessionRun):
        self.runs = runs
        self.in_use = 0
        self.last_used = time.monotonic()
