"""The asynchronous client and its leased run: the surface of :mod:`memsvc.client`, awaited."""

from __future__ import annotations

import asyncio
import contextlib
import os
import uuid
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any

import httpx

from memsvc import _api
from memsvc._api import Call
from memsvc._core import USER_AGENT, RetryPolicy, headers_for, new_request_id, result_of, transport_error
from memsvc.client import PAGE_SIZE, default_worker_id
from memsvc.errors import AuthenticationFailed, LeaseLost, MemsvcError
from memsvc.models import (
    Consolidation,
    Conversation,
    Export,
    FinishStatus,
    HomeSearch,
    IdentityKind,
    ImportResult,
    IssuedRun,
    Item,
    ItemKind,
    ItemSearch,
    Memory,
    MemoryChain,
    Message,
    Page,
    RunContext,
    RunInfo,
    SearchMode,
    ToolResult,
)


class AsyncClient:
    """The async twin of :class:`memsvc.Client`: the same methods, awaited (``iter_*`` are
    async iterators, ``run``/``claim`` async context managers). ``async with`` it, or await
    :meth:`close`."""

    def __init__(
        self,
        base_url: str,
        token: str | None = None,
        *,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        http: httpx.AsyncClient | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ):
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.retry = retry or RetryPolicy()
        self._sleep = sleep
        self._timeout = timeout
        self._given_http = http
        # An httpx connection belongs to the event loop it was opened in, so a client used from
        # several loops (``asyncio.run`` twice, a test per loop, a store kept across runs of a
        # graph) holds one httpx client for each loop, forgotten with its loop.
        self._loop_http: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = (
            weakref.WeakKeyDictionary()
        )

    @property
    def _http(self) -> httpx.AsyncClient:
        """The httpx client of the running event loop (the one given, if one was)."""
        if self._given_http is not None:
            return self._given_http
        loop = asyncio.get_running_loop()
        http = self._loop_http.get(loop)
        if http is None:
            http = httpx.AsyncClient(timeout=self._timeout, headers={"User-Agent": USER_AGENT})
            self._loop_http[loop] = http
        return http

    @classmethod
    def from_env(cls, **kwargs: Any) -> AsyncClient:
        return cls(os.environ["MEMSVC_URL"], os.environ["MEMSVC_TOKEN"], **kwargs)

    async def close(self) -> None:
        """Close the running loop's connections (those of a loop that has ended went with it);
        an httpx client that was given is the giver's to close."""
        if self._given_http is None:
            http = self._loop_http.pop(asyncio.get_running_loop(), None)
            if http is not None:
                await http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # --- sending ----------------------------------------------------------------------
    async def send(self, call: Call) -> Any:
        """Send one call, retrying it where :class:`RetryPolicy` says that is safe."""
        request_id = new_request_id()
        headers = headers_for(call, self.token, request_id)
        attempt, waited = 1, 0.0
        while True:
            try:
                try:
                    response = await self._http.request(
                        call.method, self.base_url + call.url, params=call.params, json=call.json, headers=headers
                    )
                except httpx.TransportError as exc:
                    raise transport_error(exc, request_id) from exc
                return result_of(response)
            except MemsvcError as error:
                delay = self.retry.delay(call, attempt, waited, error)
                if delay is None:
                    raise
            await self._sleep(delay)
            attempt, waited = attempt + 1, waited + delay

    async def _pages(self, build: Callable[[dict[str, Any]], Call], filters: dict[str, Any]) -> AsyncIterator[Any]:
        filters = {"page_size": PAGE_SIZE, **filters}
        page = int(filters.pop("page", None) or 1)
        while True:
            data = await self.send(build({**filters, "page": page}))
            for row in data["results"]:
                yield row
            if not data.get("next"):
                return
            page += 1

    # --- identity memories (yours) ----------------------------------------------------
    async def list_memories(
        self,
        *,
        kind: str | list[str] | None = None,
        status: str | None = None,
        origin: str | None = None,
        q: str | None = None,
        created_after: str | None = None,
        created_before: str | None = None,
        page: int | None = None,
        page_size: int | None = None,
    ) -> Page:
        filters = {k: v for k, v in locals().items() if k != "self"}
        return await self.send(_api.memories_list(filters))

    def iter_memories(
        self,
        *,
        kind: str | list[str] | None = None,
        status: str | None = None,
        origin: str | None = None,
        q: str | None = None,
        created_after: str | None = None,
        created_before: str | None = None,
        page_size: int | None = None,
    ) -> AsyncIterator[Memory]:
        filters = {k: v for k, v in locals().items() if k != "self"}
        return self._pages(_api.memories_list, filters)

    async def get_memory(self, memory_id: str) -> Memory:
        return await self.send(_api.memory_get(memory_id))

    async def add_memory(
        self,
        content: str,
        kind: IdentityKind = "fact",
        *,
        metadata: dict[str, Any] | None = None,
        evidence: dict[str, Any] | None = None,
        source_thread_id: str | None = None,
    ) -> Memory:
        return await self.send(_api.memory_add(content, kind, metadata, evidence, source_thread_id))

    async def correct_memory(
        self,
        memory_id: str,
        content: str,
        *,
        kind: IdentityKind | None = None,
        metadata: dict[str, Any] | None = None,
        evidence: dict[str, Any] | None = None,
    ) -> Memory:
        """Supersede: a new version replaces the active one (409 ``not_active`` otherwise)."""
        return await self.send(_api.memory_correct(memory_id, content, kind, metadata, evidence))

    async def forget_memory(self, memory_id: str) -> None:
        """Delete the memory and every older version it replaced."""
        return await self.send(_api.memory_forget(memory_id))

    async def memory_chain(self, memory_id: str) -> MemoryChain:
        return await self.send(_api.memory_chain(memory_id))

    # --- project identity memories ----------------------------------------------------
    async def list_project_memories(
        self,
        project_id: str,
        *,
        kind: str | list[str] | None = None,
        status: str | None = None,
        origin: str | None = None,
        q: str | None = None,
        created_after: str | None = None,
        created_before: str | None = None,
        page: int | None = None,
        page_size: int | None = None,
    ) -> Page:
        filters = {k: v for k, v in locals().items() if k not in ("self", "project_id")}
        return await self.send(_api.project_memories_list(project_id, filters))

    def iter_project_memories(
        self,
        project_id: str,
        *,
        kind: str | list[str] | None = None,
        status: str | None = None,
        origin: str | None = None,
        q: str | None = None,
        created_after: str | None = None,
        created_before: str | None = None,
        page_size: int | None = None,
    ) -> AsyncIterator[Memory]:
        filters = {k: v for k, v in locals().items() if k not in ("self", "project_id")}
        return self._pages(lambda f: _api.project_memories_list(project_id, f), filters)

    async def get_project_memory(self, project_id: str, memory_id: str) -> Memory:
        return await self.send(_api.project_memory_get(project_id, memory_id))

    async def add_project_memory(
        self,
        project_id: str,
        content: str,
        kind: IdentityKind = "fact",
        *,
        metadata: dict[str, Any] | None = None,
        evidence: dict[str, Any] | None = None,
        source_thread_id: str | None = None,
    ) -> Memory:
        return await self.send(_api.project_memory_add(project_id, content, kind, metadata, evidence, source_thread_id))

    async def correct_project_memory(
        self,
        project_id: str,
        memory_id: str,
        content: str,
        *,
        kind: IdentityKind | None = None,
        metadata: dict[str, Any] | None = None,
        evidence: dict[str, Any] | None = None,
    ) -> Memory:
        return await self.send(_api.project_memory_correct(project_id, memory_id, content, kind, metadata, evidence))

    async def forget_project_memory(self, project_id: str, memory_id: str) -> None:
        return await self.send(_api.project_memory_forget(project_id, memory_id))

    async def project_memory_chain(self, project_id: str, memory_id: str) -> MemoryChain:
        return await self.send(_api.project_memory_chain(project_id, memory_id))

    # --- memory home, export, import --------------------------------------------------
    async def search_home(self, q: str, *, limit: int | None = None) -> HomeSearch:
        """One search over everything agents may use about you (docs/home.md)."""
        return await self.send(_api.home_search(q, limit))

    async def export(self) -> Export:
        return await self.send(_api.export())

    async def import_export(self, document: Export) -> ImportResult:
        """Import an export (idempotent: a second import of the same file changes nothing)."""
        return await self.send(_api.import_(document))

    # --- scoped items (service principals) --------------------------------------------
    async def add_item(
        self,
        content: str,
        kind: ItemKind,
        *,
        session_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        evidence: dict[str, Any] | None = None,
        scope_type: str | None = None,
    ) -> Item:
        return await self.send(_api.item_add(content, kind, session_id, metadata, evidence, scope_type))

    async def search_items(
        self,
        query: str,
        session_id: str,
        *,
        limit: int | None = None,
        mode: SearchMode | None = None,
        keep_best: bool | None = None,
    ) -> ItemSearch:
        """``POST /api/memory/search``: the chat's items first, then global ones; only those
        that match, or with ``keep_best`` the closest when none does (``matched`` False)."""
        return await self.send(_api.items_search(query, session_id, limit, mode, keep_best))

    async def consolidate(self, session_id: str, messages: Iterable[dict[str, str]]) -> Consolidation:
        return await self.send(_api.consolidate(session_id, messages))

    # --- conversations and messages ---------------------------------------------------
    async def create_conversation(
        self,
        user: str,
        *,
        title: str | None = None,
        project_id: str | None = None,
        source: str | None = None,
        parent_id: str | None = None,
        session_key: str | None = None,
        no_memory: bool | None = None,
        external_id: str | None = None,
    ) -> Conversation:
        """``external_id``: the runtime's own id for it; when the user has a conversation with
        that id, that one is returned instead of a new one."""
        return await self.send(
            _api.conversation_create(user, title, project_id, source, parent_id, session_key, no_memory, external_id)
        )

    async def get_conversation(self, conversation_id: str) -> Conversation:
        return await self.send(_api.conversation_get(conversation_id))

    async def update_conversation(
        self,
        conversation_id: str,
        *,
        title: str | None = None,
        status: str | None = None,
        no_memory: bool | None = None,
    ) -> Conversation:
        return await self.send(_api.conversation_update(conversation_id, title, status, no_memory))

    async def list_conversations(self, **filters: Any) -> Page:
        """Filters and ``ordering`` as in docs/API.md ("List filters and ordering")."""
        return await self.send(_api.conversations_list(filters))

    def iter_conversations(self, **filters: Any) -> AsyncIterator[Conversation]:
        return self._pages(_api.conversations_list, filters)

    async def add_message(
        self,
        conversation_id: str,
        role: str,
        content: str = "",
        *,
        type: str | None = None,
        metadata: dict[str, Any] | None = None,
        attachments: list[Any] | None = None,
        run_id: str | None = None,
        tool_calls: list[dict[str, Any]] | None = None,
    ) -> Message:
        return await self.send(
            _api.message_add(conversation_id, role, content, type, metadata, attachments, run_id, tool_calls)
        )

    async def add_messages(self, conversation_id: str, messages: list[dict[str, Any]]) -> list[Message]:
        """Several messages (each a dict of ``add_message``'s fields: ``role``, ``content``,
        ``type``, ``metadata``, …) in order, all or none, with no other writer's between them;
        at most 100 a call."""
        return (await self.send(_api.messages_add(conversation_id, messages)))["results"]

    async def forget_message(self, conversation_id: str, message_id: int) -> None:
        """Forget one message (the turn after it is indexed again without it)."""
        await self.send(_api.message_forget(conversation_id, message_id))

    async def forget_messages(self, conversation_id: str) -> int:
        """Forget every message of the conversation; returns how many. The service forgets at most
        10,000 a call (oldest first) and says how many are left: called again until none is."""
        forgotten = 0
        while True:
            done = await self.send(_api.messages_forget(conversation_id))
            forgotten += done["forgotten"]
            if not done.get("remaining") or not done["forgotten"]:
                return forgotten

    async def store_batch(self, ops: list[dict[str, Any]]) -> list[Any]:
        """Run store operations (docs/integrations.md, "The store") in one request and one
        transaction; one result per operation."""
        return (await self.send(_api.store_batch(ops)))["results"]

    async def get_message(self, conversation_id: str, message_id: int) -> Message:
        return await self.send(_api.message_get(conversation_id, message_id))

    async def list_messages(self, conversation_id: str, **filters: Any) -> Page:
        return await self.send(_api.messages_list(conversation_id, filters))

    def iter_messages(self, conversation_id: str) -> AsyncIterator[dict[str, Any]]:
        return self._pages(lambda f: _api.messages_list(conversation_id, f), {})

    # --- runs, one call at a time -----------------------------------------------------
    async def create_run(
        self,
        user: str,
        conversation_id: str,
        *,
        worker_id: str | None = None,
        request_id: str | None = None,
        kind: str = "chat",
        lease_seconds: int = 60,
        prompt: str = "",
        goal: str | None = None,
        parent_run_id: str | None = None,
        project_id: str | None = None,
    ) -> IssuedRun:
        """Not retried after a lost answer: a second create is a second run."""
        return await self.send(
            _api.run_create(
                user,
                conversation_id,
                request_id or uuid.uuid4().hex,
                kind,
                worker_id or default_worker_id(),
                lease_seconds,
                prompt,
                goal,
                parent_run_id,
                project_id,
            )
        )

    async def get_run(self, run_id: str) -> RunInfo:
        return await self.send(_api.run_get(run_id))

    async def list_runs(self, **filters: Any) -> Page:
        return await self.send(_api.runs_list(filters))

    def iter_runs(self, **filters: Any) -> AsyncIterator[dict[str, Any]]:
        return self._pages(_api.runs_list, filters)

    async def claim_run(self, run_id: str, *, worker_id: str | None = None, lease_seconds: int = 60) -> IssuedRun:
        """Take over a run whose lease expired (or renew your own): 409 ``lease_held`` otherwise."""
        return await self.send(_api.run_claim(run_id, worker_id or default_worker_id(), lease_seconds))

    async def heartbeat(self, run_id: str, run_token: str, *, lease_seconds: int | None = None) -> RunInfo:
        return await self.send(_api.run_heartbeat(run_id, run_token, lease_seconds))

    async def finish_run(
        self, run_id: str, run_token: str, status: FinishStatus = "completed", *, usage: dict[str, Any] | None = None
    ) -> RunInfo:
        return await self.send(_api.run_finish(run_id, run_token, status, usage))

    async def run_context(
        self, run_id: str, run_token: str, *, query: str = "", round: int | None = None
    ) -> RunContext:
        return await self.send(_api.run_context(run_id, run_token, query, round))

    async def call_tool(self, run_id: str, run_token: str, tool: str, arguments: dict[str, Any]) -> ToolResult:
        return await self.send(_api.run_tool(run_id, run_token, tool, arguments))

    # --- runs, as a lease held for a block of work ------------------------------------
    def run(
        self,
        conversation: Conversation | str,
        *,
        user: str | None = None,
        worker_id: str | None = None,
        request_id: str | None = None,
        kind: str = "chat",
        lease_seconds: int = 60,
        renew_every: float | None = None,
        prompt: str = "",
        goal: str | None = None,
        parent_run_id: str | None = None,
        project_id: str | None = None,
    ) -> AsyncRun:
        """Open a leased run in ``conversation`` (a conversation or its id; ``user`` defaults
        to the conversation's owner). ``async with client.run(...) as run:`` renews the lease in the
        background every ``renew_every`` seconds (a third of the lease), and finishes the run
        on exit: ``completed``, or ``failed`` when the block raised (``cancelled`` for
        KeyboardInterrupt and the like); the exception is raised on."""
        if user is None:
            if not isinstance(conversation, dict):
                raise TypeError("user= is needed when the conversation is given by id")
            user = conversation["owner"]
        worker_id = worker_id or default_worker_id()

        async def open_run() -> IssuedRun:
            return await self.create_run(
                user,
                _api._id(conversation),
                worker_id=worker_id,
                request_id=request_id,
                kind=kind,
                lease_seconds=lease_seconds,
                prompt=prompt,
                goal=goal,
                parent_run_id=parent_run_id,
                project_id=project_id,
            )

        return AsyncRun(self, open_run, worker_id=worker_id, lease_seconds=lease_seconds, renew_every=renew_every)

    def claim(
        self, run_id: str, *, worker_id: str | None = None, lease_seconds: int = 60, renew_every: float | None = None
    ) -> AsyncRun:
        """Take over a run another worker left (its lease expired) and hold it like :meth:`run`;
        :class:`~memsvc.LeaseHeld` while the other worker's lease is live."""
        worker_id = worker_id or default_worker_id()

        async def claim_run() -> IssuedRun:
            return await self.claim_run(run_id, worker_id=worker_id, lease_seconds=lease_seconds)

        return AsyncRun(self, claim_run, worker_id=worker_id, lease_seconds=lease_seconds, renew_every=renew_every)


class AsyncRun:
    """A run this worker holds, opened (created or claimed) by ``async with`` or :meth:`open`;
    the lease is renewed by a background task. Once the lease is lost every call raises
    :class:`~memsvc.LeaseLost`."""

    def __init__(
        self,
        client: AsyncClient,
        opener: Callable[[], Awaitable[IssuedRun]],
        *,
        worker_id: str,
        lease_seconds: int,
        renew_every: float | None,
    ):
        self.client = client
        self._opener = opener
        self.info: RunInfo | None = None
        self.id: str = ""
        self.token: str = ""
        self.conversation_id: str = ""
        self.worker_id = worker_id
        self.lease_seconds = lease_seconds
        self.renew_every = renew_every if renew_every is not None else lease_seconds / 3
        self.usage: dict[str, Any] = {}  # sent with finish
        self.renewals = 0
        self.renew_error: MemsvcError | None = None  # the last failed renewal, if any
        self.lost: LeaseLost | None = None
        self.finished = False
        self._renewer: asyncio.Task | None = None

    @property
    def lease_expires_at(self) -> str | None:
        return self.info["lease_expires_at"] if self.info else None

    async def open(self) -> AsyncRun:
        """Create (or claim) the run and start renewing its lease in a background task."""
        if self.info is None:
            issued = await self._opener()
            self.info, self.id, self.token = issued, issued["id"], issued["run_token"]
            self.conversation_id = issued["conversation_id"]
        if self._renewer is None:
            self._renewer = asyncio.create_task(self._renew(), name=f"memsvc-lease-{self.id}")
        return self

    # --- the lease --------------------------------------------------------------------
    async def _send(self, call: Call, *, even_if_lost: bool = False) -> Any:
        if self.lost is not None and not even_if_lost:
            raise self.lost
        try:
            return await self.client.send(call)
        except LeaseLost as exc:
            self.lost = exc
            raise
        except AuthenticationFailed as exc:  # the token was replaced by another worker's claim
            self.lost = LeaseLost(
                "The run was claimed by another worker; this token is no longer valid.",
                status=exc.status,
                code=exc.code,
                request_id=exc.request_id,
                headers=exc.headers,
            )
            raise self.lost from exc

    async def heartbeat(self) -> RunInfo:
        info = await self._send(_api.run_heartbeat(self.id, self.token, self.lease_seconds))
        self.info = info
        self.renewals += 1
        return info

    async def _renew(self) -> None:
        while True:
            await asyncio.sleep(self.renew_every)
            try:
                await self.heartbeat()
            except LeaseLost:
                return
            except MemsvcError as exc:  # transient: try again at the next tick
                self.renew_error = exc

    async def stop_renewing(self) -> None:
        task, self._renewer = self._renewer, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    # --- what the agent does ----------------------------------------------------------
    async def context(self, query: str = "", *, round: int | None = None) -> RunContext:
        return await self._send(_api.run_context(self.id, self.token, query, round))

    async def call_tool(self, tool: str, **arguments: Any) -> ToolResult:
        return await self._send(_api.run_tool(self.id, self.token, tool, arguments))

    async def remember(self, content: str, replaces: str | None = None) -> ToolResult:
        """Note ``content`` in the user's notes file (``replaces``: the exact text it replaces)."""
        return await self.call_tool("remember_memory", **_api._body(content=content, replaces=replaces))

    async def search_history(self, query: str, *, limit: int | None = None) -> ToolResult:
        return await self.call_tool("search_thread_messages", **_api._body(query=query, limit=limit))

    async def read_history(
        self,
        thread_id: str | None = None,
        *,
        limit: int | None = None,
        before_message_id: int | None = None,
        include_tools: bool | None = None,
    ) -> ToolResult:
        """Messages of one of the user's threads (this run's own by default)."""
        arguments = _api._body(
            thread_id=thread_id or self.conversation_id,
            limit=limit,
            before_message_id=before_message_id,
            include_tools=include_tools,
        )
        return await self.call_tool("read_thread_messages", **arguments)

    async def add_message(self, role: str, content: str = "", **fields: Any) -> Message:
        """A message of this run in its conversation (sent with the client's service key)."""
        return await self.client.add_message(self.conversation_id, role, content, run_id=self.id, **fields)

    async def finish(self, status: FinishStatus = "completed", *, usage: dict[str, Any] | None = None) -> RunInfo:
        await self.stop_renewing()
        if usage:
            self.usage.update(usage)
        # Tried even after a failed renewal: the service still takes the outcome of an expired
        # lease nobody took over.
        info = await self._send(_api.run_finish(self.id, self.token, status, self.usage or None), even_if_lost=True)
        self.info, self.finished = info, True
        return info

    async def __aenter__(self) -> AsyncRun:
        return await self.open()

    async def __aexit__(self, exc_type, exc, tb) -> None:
        await self.stop_renewing()
        if self.finished:
            return
        if exc_type is None:
            await self.finish("completed")  # a lost lease raises here: the outcome was not recorded
            return
        status: FinishStatus = "failed" if issubclass(exc_type, Exception) else "cancelled"
        with contextlib.suppress(MemsvcError):  # the block's own exception is the one to raise
            await self.finish(status)
