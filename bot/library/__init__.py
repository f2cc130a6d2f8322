"""The user's file library: uploaded and generated files, their text, and search over it.

Every lookup is scoped to one user: a file id of someone else behaves exactly like a missing id.
Bytes live in the file store (services.files) under keys we make; the user's file name is only
ever a label. Modules: `files` (storing, listing, generated files), `chunks` (a file's text cut
on its pages and paragraphs), `text` (the keyword text both databases index), `embeddings`
(local model or an OpenAI-compatible API), `index` (chunks kept up to date and embedded),
`search` (keywords and vectors in one score), `reading` (photos and scans read by
OCR), `names` (names people recognise: a caption, a document's title, a photo's first line).
"""

from bot.library.chunks import Chunk, chunk_file
from bot.library.embeddings import Embedder, EmbeddingError, LocalEmbedder, OpenAIEmbedder, embedder_for
from bot.library.errors import LibraryError
from bot.library.files import (
    ORIGINS,
    WHATSAPP_MEDIA_TYPES,
    add_file,
    count_files,
    delete_file,
    generated_result,
    get_file,
    list_files,
    list_files_counted,
    new_storage_key,
    publish_generated,
    read_bytes,
    visible,
)
from bot.library.index import (
    INDEX_INTERVAL_S,
    EmbedReport,
    embed_pending,
    index_file,
    index_jobs,
    index_stale,
    reindex,
)
from bot.library.names import clean_title, first_line_title, unique_name
from bot.library.reading import needs_reading, read_and_index, read_text_of
from bot.library.search import (
    MAX_QUERY_TERMS,
    Ranked,
    SearchHit,
    fuse,
    meaning_query,
    query_terms,
    search_files,
    snippet_of,
)
from bot.library.text import fold, keyword_terms

__all__ = [
    "INDEX_INTERVAL_S",
    "MAX_QUERY_TERMS",
    "ORIGINS",
    "WHATSAPP_MEDIA_TYPES",
    "Chunk",
    "EmbedReport",
    "Embedder",
    "EmbeddingError",
    "LibraryError",
    "LocalEmbedder",
    "OpenAIEmbedder",
    "Ranked",
    "SearchHit",
    "add_file",
    "chunk_file",
    "clean_title",
    "count_files",
    "delete_file",
    "embed_pending",
    "embedder_for",
    "first_line_title",
    "fold",
    "fuse",
    "generated_result",
    "get_file",
    "index_file",
    "index_jobs",
    "index_stale",
    "keyword_terms",
    "list_files",
    "list_files_counted",
    "meaning_query",
    "needs_reading",
    "new_storage_key",
    "publish_generated",
    "query_terms",
    "read_and_index",
    "read_bytes",
    "read_text_of",
    "reindex",
    "search_files",
    "snippet_of",
    "unique_name",
    "visible",
]
