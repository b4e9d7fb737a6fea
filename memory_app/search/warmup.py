"""What a new server process loads before its first request (``config/gunicorn.py``,
``post_worker_init``, through the ``SERVER_WARMUPS`` setting), so that the first search of each
process, after every start and every recycling (``max_requests``), is not the one that waits for
it: the confusables table of the low-trust frames (~0.1 s), the bilingual lexicon (CC-CEDICT,
~1.2 s) and the common words of twelve languages (wordfreq, ~0.6 s), and with the e5 model its
weights (~0.1 s) and the background texts and queries its floors and language direction are
measured against (about 1.5 s of embedding on one core). A remote model (``openai``) is left
alone: no request leaves the process before a search asks for one.
"""

import logging
import os
import time

from config import lowtrust
from memory_app.search import lexicon
from memory_app.search.background import background_questions
from memory_app.search.embeddings import E5Embedding, get_provider, language_direction

logger = logging.getLogger(__name__)


def warm() -> None:
    started = time.perf_counter()
    lowtrust.load_tables()
    lexicon.read_words("")  # the tables, the English words of its translations, the common words
    provider = get_provider()
    if isinstance(provider, E5Embedding):
        language_direction(provider)  # embeds the background texts: loads the model too
        # The background queries and questions of the lists' and the home's floors and gates, and
        # of /api/memory/search's.
        background_questions(provider, across_languages=True)
        background_questions(provider, across_languages=False)
    logger.info(
        "process %d warmed up in %d ms (embeddings: %s)",
        os.getpid(),
        (time.perf_counter() - started) * 1000,
        provider.name,
    )
