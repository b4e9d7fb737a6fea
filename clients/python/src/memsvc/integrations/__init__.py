"""Adapters that let code written for other libraries keep its memory here
(docs/integrations.md): each speaks that library's interface and translates to the service.

- :mod:`memsvc.integrations.langgraph` — ``MemoryStore``, a LangGraph ``BaseStore``
  (``pip install 'memsvc-client[langgraph]'``);
- :mod:`memsvc.integrations.openai_agents` — ``MemorySession``, an OpenAI Agents SDK session
  (``[openai-agents]``);
- :mod:`memsvc.integrations.langchain` — ``MemoryRetriever``, a LangChain retriever, and
  ``MemoryChatMessageHistory``, a LangChain chat message history (``[langchain]``).

Each imports its library only when it is imported itself, and each has ``from_env()``, reading
``MEMSVC_URL`` and ``MEMSVC_TOKEN`` as :meth:`memsvc.Client.from_env` does.
"""
