"""A daemon thread per process that works whenever it is woken (the background embedder, the
reads writer)."""

import threading


class WokenThread:
    """One daemon thread per process running the subclass's ``_loop``, started by the first
    ``wake`` (and again in a forked child, where the parent's thread does not exist). ``_loop``
    waits on ``_wake``; ``_lock`` guards the start and whatever the subclass keeps beside it."""

    thread_name = "woken"

    def __init__(self) -> None:
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def wake(self) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name=self.thread_name, daemon=True)
                self._thread.start()
            self._woken()
            self._wake.set()

    def _woken(self) -> None:
        """Under the lock, just before the thread is woken."""

    def _loop(self) -> None:
        raise NotImplementedError
