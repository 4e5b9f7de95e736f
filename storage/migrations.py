"""The schema's migrations, in order (`MIGRATIONS`; `storage.db.migrate` applies them,
each in one transaction with its record row). Moved out of `storage.db` so it stays under
the 700-line module cap; `storage.db` re-exports `MIGRATIONS`."""

from __future__ import annotations


def _script(conn, sql: str) -> None:
    """Run statements one by one: `executescript` would COMMIT the migration's transaction."""
    for stmt in sql.split(";"):
        if stmt.strip():
            conn.execute(stmt)


def _m001_initial(conn) -> None:
    _script(
        conn,
        """
        CREATE TABLE brainbox_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE events (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            at REAL NOT NULL,
            session TEXT NOT NULL,
            project TEXT NOT NULL,
            kind TEXT NOT NULL,
            tool TEXT,
            action TEXT,
            files TEXT NOT NULL DEFAULT '[]',
            command TEXT,
            error TEXT,
            error_fp TEXT,
            exit_code INTEGER,
            prompt TEXT,
            args TEXT,
            meta TEXT
        );
        CREATE INDEX events_session ON events(session, id);
        CREATE TABLE resources (
            id INTEGER PRIMARY KEY,
            kind INTEGER NOT NULL,
            project TEXT NOT NULL,
            key TEXT NOT NULL,
            UNIQUE (kind, project, key)
        );
        CREATE TABLE state_blobs (
            name TEXT PRIMARY KEY,
            dtype TEXT NOT NULL,
            shape TEXT NOT NULL,
            data BLOB NOT NULL
        );
        """
    )
    conn.execute(
        "INSERT INTO brainbox_meta(key, value) VALUES ('application', 'brainbox')"
    )


def _m002_event_uid(conn) -> None:
    """`events.uid`: the id a hook gives each event before it commits or spools it, unique
    when set, so a spooled copy of a committed event is stored once (a drain killed between
    its commit and its unlink stored the whole file twice: reliability report D7). Events
    from other writers have none."""
    _script(
        conn,
        """
        ALTER TABLE events ADD COLUMN uid TEXT;
        CREATE UNIQUE INDEX events_uid ON events(uid) WHERE uid IS NOT NULL
        """
    )


def _m003_code_index(conn) -> None:
    """The code index (issue 16, `storage.codeindex`): indexed files with their content hash,
    and their chunks (functions, classes, methods, windows of lines)."""
    _script(
        conn,
        """
        CREATE TABLE code_files (
            id INTEGER PRIMARY KEY,
            root TEXT NOT NULL,
            path TEXT NOT NULL,
            sha256 TEXT NOT NULL,
            size INTEGER NOT NULL,
            language TEXT,
            chunker TEXT NOT NULL,
            indexed_at REAL NOT NULL,
            UNIQUE (root, path)
        );
        CREATE TABLE code_chunks (
            id INTEGER PRIMARY KEY,
            file_id INTEGER NOT NULL REFERENCES code_files(id) ON DELETE CASCADE,
            start_line INTEGER NOT NULL,
            end_line INTEGER NOT NULL,
            kind TEXT NOT NULL,
            symbol TEXT
        );
        CREATE INDEX code_chunks_file ON code_chunks(file_id)
        """
    )


def _m004_code_fts(conn) -> None:
    """Full-text search over the code index's chunks (issue 16, `storage.codeindex`): one
    FTS5 row per chunk, its rowid the chunk's id, with three columns of pre-split terms
    (`brainbox.text`: the chunk's path, its symbol, its own lines). The terms are lowercase
    `[a-z0-9_-]` words, so `unicode61` with `_` and `-` as token characters keeps each one
    whole (`foo_bar` stays one token beside `foo` and `bar`). A trigger drops a chunk's row
    when the chunk is deleted, also by the cascade from its file; `code_fts_terms` (fts5vocab)
    gives each term's number of rows. Rows of chunks stored
    before this migration are made when their files are re-chunked: the chunker versions
    changed with it (`brainbox.codeindex`)."""
    _script(
        conn,
        """
        CREATE VIRTUAL TABLE code_fts USING fts5(
            path, symbol, body, tokenize = "unicode61 tokenchars '_-'"
        )
        """
    )
    # each term's count of rows, read by search to leave out terms in most chunks
    conn.execute("CREATE VIRTUAL TABLE code_fts_terms USING fts5vocab(code_fts, row)")
    # one statement with a `;` inside: not through `_script`, which splits on them
    conn.execute("CREATE TRIGGER code_chunks_fts_delete AFTER DELETE ON code_chunks BEGIN "
                 "DELETE FROM code_fts WHERE rowid = old.id; END")


def _m005_code_vectors(conn) -> None:
    """Embedding vectors of the code index's chunks (issue 16, `storage.vectors`): one row
    per embedded chunk, deleted with the chunk (ON DELETE CASCADE, so a re-chunked or
    removed file loses its vectors through any driver). `vec` holds the float32 vector,
    or NULL when it is in the sqlite-vec table `code_vec` (made by `storage.vectors` on a
    connection that can load the extension: this migration may run on one that cannot).
    Every insert, update or delete of a row (the cascade's too) adds one to the meta value
    `code_vectors_version`, which tells a process's cached matrix of vectors it is stale."""
    _script(
        conn,
        """
        CREATE TABLE code_vectors (
            chunk_id INTEGER PRIMARY KEY REFERENCES code_chunks(id) ON DELETE CASCADE,
            vec BLOB
        );
        INSERT INTO brainbox_meta(key, value) VALUES ('code_vectors_version', '0')
        """
    )
    bump = ("UPDATE brainbox_meta SET value = CAST(value AS INTEGER) + 1 "
            "WHERE key = 'code_vectors_version'; END")
    for event in ("INSERT", "UPDATE", "DELETE"):  # `;` inside: not through `_script`
        conn.execute(f"CREATE TRIGGER code_vectors_{event.lower()} AFTER {event} ON "
                     f"code_vectors BEGIN {bump}")


def _m006_code_graph(conn) -> None:
    """The code graph (issue 16, `storage.codegraph`): each indexed file's raw references
    (JSON, deleted with the file), the edges resolved from them per project, and the
    projects whose edges are stale. Triggers on `code_files` mark the project stale and
    drop the edges from and to a file whenever it is stored, replaced or removed, so no
    edge outlives its file even before the next resolution. Projects indexed before this
    migration are marked stale; their files get references when re-chunked (the chunker
    version changed with it, `brainbox.codeindex`)."""
    _script(
        conn,
        """
        CREATE TABLE code_refs (
            file_id INTEGER PRIMARY KEY REFERENCES code_files(id) ON DELETE CASCADE,
            refs TEXT NOT NULL
        );
        CREATE TABLE code_edges (
            root TEXT NOT NULL,
            src TEXT NOT NULL,
            dst TEXT NOT NULL,
            kind TEXT NOT NULL,
            weight REAL NOT NULL,
            PRIMARY KEY (root, src, dst, kind)
        ) WITHOUT ROWID;
        CREATE INDEX code_edges_dst ON code_edges(root, dst);
        CREATE TABLE code_graph_dirty (root TEXT PRIMARY KEY);
        INSERT INTO code_graph_dirty(root) SELECT DISTINCT root FROM code_files
        """
    )
    mark = "INSERT OR IGNORE INTO code_graph_dirty(root) VALUES (new.root); END"
    conn.execute("CREATE TRIGGER code_files_graph_insert AFTER INSERT ON code_files BEGIN "
                 + mark)
    conn.execute("CREATE TRIGGER code_files_graph_delete AFTER DELETE ON code_files BEGIN "
                 "DELETE FROM code_edges WHERE root = old.root AND src = old.path; "
                 "DELETE FROM code_edges WHERE root = old.root AND dst = old.path; "
                 + mark.replace("new.", "old."))


def _m007_chunk_names(conn) -> None:
    """Each chunk's defined name, the last dotted part of its qualified symbol
    (`Class.method` -> `method`; NULL for windows of lines), as a generated column with an
    index: the code search looks up the names a query mentions (`brainbox.codesearch`,
    the symbol ranking). Generated, so every chunk has it, old ones included, and no
    writer can get it wrong. `rtrim(symbol, <its characters but dots>)` keeps the symbol
    up to its last dot."""
    conn.execute("ALTER TABLE code_chunks ADD COLUMN name TEXT GENERATED ALWAYS AS "
                 "(substr(symbol, length(rtrim(symbol, replace(symbol, '.', ''))) + 1)) "
                 "VIRTUAL")
    conn.execute("CREATE INDEX code_chunks_name ON code_chunks(name)")


def _m008_event_worktree(conn) -> None:
    """`events.worktree`: the worktree root an event was recorded in, when it is not the
    project key (issue 17: the key is the repository, shared by every worktree of a clone,
    `brainbox.identity`); NULL for an event of the main worktree, outside git, or from
    before. Recall may prefer files last touched in the asking worktree, and merging an
    old per-worktree key into its repository (`brainbox.projectmerge`) keeps the old key
    here, so nothing that told worktrees apart is lost."""
    conn.execute("ALTER TABLE events ADD COLUMN worktree TEXT")


def _m009_event_source(conn) -> None:
    """`events.source`: where an event came from (issue 19, provenance): "hook", "import",
    "mcp" or "cli"; NULL for other writers (the replay, the demo, a library caller). The
    detail is in `meta` (a hook's `agent` and `event`, a sub-agent's `agent_id`; an
    import's `transcript` and `line`). Older rows whose meta names an agent and a hook event
    become "hook" (an import's meta named them too, with nothing to tell it apart: an
    old import counts as a hook); the rest stays NULL. No index: a filter by source
    folds the whole log anyway, and the record hook pays for every index."""
    conn.execute("ALTER TABLE events ADD COLUMN source TEXT")
    conn.execute("UPDATE events SET source = 'hook' WHERE json_valid(meta) AND "
                 "json_extract(meta, '$.agent') IS NOT NULL AND "
                 "json_extract(meta, '$.event') IS NOT NULL")


MIGRATIONS = [("001_initial", _m001_initial), ("002_event_uid", _m002_event_uid),
              ("003_code_index", _m003_code_index), ("004_code_fts", _m004_code_fts),
              ("005_code_vectors", _m005_code_vectors), ("006_code_graph", _m006_code_graph),
              ("007_chunk_names", _m007_chunk_names),
              ("008_event_worktree", _m008_event_worktree),
              ("009_event_source", _m009_event_source)]
# 010_event_chain is storage.db's (it appends through `append_events`).
