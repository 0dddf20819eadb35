/**
 * SQLite SQL, as the domains write it, turned into Postgres SQL with the same meaning. The
 * domains keep one text per statement; only what differs between the two dialects changes here:
 *
 * - `?` placeholders → `$1, $2, …` (never inside a quoted literal or identifier);
 * - `INSERT OR IGNORE` → `INSERT … ON CONFLICT DO NOTHING`; `INSERT OR REPLACE` → an upsert on the
 *   table's primary key that rewrites every column given and takes a new `rowid` (SQLite's REPLACE
 *   deletes the old row and inserts a new one);
 * - DDL: `BLOB` → `BYTEA`, `INTEGER` → `BIGINT` (SQLite integers are 64-bit: ms timestamps do not
 *   fit Postgres' `integer`; `INTEGER PRIMARY KEY`, SQLite's rowid alias, numbers itself: `BIGSERIAL`), `TEXT` → `TEXT COLLATE "C"` (SQLite compares text byte by byte:
 *   `ORDER BY payment_hash` and `payment_hash > ?` page the same way on both), and every table gets
 *   a `rowid BIGSERIAL` column, as SQLite's implicit rowid (`ORDER BY rowid` = insertion order);
 * - `LIKE` → `ILIKE` (SQLite's LIKE ignores ASCII case);
 * - a mixed-case alias (`AS peerId`) is quoted, as Postgres folds unquoted names to lower case.
 */

/** Splits SQL text at `;` outside quotes; empty statements are dropped. */
export function splitStatements(sql: string): string[] {
  const out: string[] = [];
  let cur = '';
  for (const tok of tokens(sql)) {
    if (tok === ';') {
      if (cur.trim()) out.push(cur.trim());
      cur = '';
    } else cur += tok;
  }
  if (cur.trim()) out.push(cur.trim());
  return out;
}

/**
 * The SQL cut into quoted literals/identifiers (kept whole) and the text between them, one
 * character token for `;` and `?`, so rewrites never touch what is quoted.
 */
function* tokens(sql: string): Generator<string> {
  let i = 0;
  let plain = '';
  while (i < sql.length) {
    const c = sql[i]!;
    if (c === "'" || c === '"') {
      if (plain) yield plain;
      plain = '';
      let j = i + 1;
      for (;;) {
        if (j >= sql.length) break;
        if (sql[j] === c) {
          if (sql[j + 1] === c) j += 2;
          else break;
        } else j++;
      }
      yield sql.slice(i, j + 1);
      i = j + 1;
    } else if (c === ';' || c === '?') {
      if (plain) yield plain;
      plain = '';
      yield c;
      i++;
    } else {
      plain += c;
      i++;
    }
  }
  if (plain) yield plain;
}

const isQuoted = (t: string) => t.startsWith("'") || t.startsWith('"');

/** Rewrites the unquoted parts of one statement with `f`, and numbers the placeholders. */
function rewrite(sql: string, f: (plain: string) => string): { text: string; params: number } {
  let n = 0;
  let text = '';
  for (const tok of tokens(sql)) {
    if (tok === '?') text += `$${++n}`;
    else if (isQuoted(tok) || tok === ';') text += tok;
    else text += f(tok);
  }
  return { text, params: n };
}

/** What the translation needs to know about the database: a table's primary-key columns. */
export type PrimaryKeyOf = (table: string) => string[];

export interface Translated {
  text: string;
  /** How many `$n` placeholders the text has. */
  params: number;
}

/** One statement, SQLite → Postgres. */
export function translate(sql: string, primaryKeyOf: PrimaryKeyOf): Translated {
  const head = sql.trimStart().slice(0, 12).toUpperCase();
  if (head.startsWith('CREATE') || head.startsWith('ALTER')) return rewrite(sql, ddl);
  let s = sql;
  const orIgnore = /^\s*INSERT\s+OR\s+IGNORE\s+INTO\b/i;
  const orReplace = /^\s*INSERT\s+OR\s+REPLACE\s+INTO\s+([A-Za-z_][A-Za-z0-9_]*)\s*\(([^)]*)\)/i;
  const replace = s.match(orReplace);
  if (orIgnore.test(s)) {
    s = `${s.replace(orIgnore, 'INSERT INTO')} ON CONFLICT DO NOTHING`;
  } else if (replace) {
    const table = replace[1]!;
    const cols = replace[2]!.split(',').map((c) => c.trim());
    const key = primaryKeyOf(table);
    const set = cols.filter((c) => !key.includes(c)).map((c) => `${c} = excluded.${c}`);
    set.push('rowid = DEFAULT');
    s = `${s.replace(/^\s*INSERT\s+OR\s+REPLACE\s+INTO\b/i, 'INSERT INTO')} ON CONFLICT (${key.join(', ')}) DO UPDATE SET ${set.join(', ')}`;
  }
  return rewrite(s, dml);
}

function dml(plain: string): string {
  return plain
    .replace(/\bLIKE\b/gi, 'ILIKE')
    .replace(/\bAS\s+([A-Za-z_][A-Za-z0-9_]*)/g, (m, name: string) =>
      name === name.toLowerCase() ? m : `AS "${name}"`,
    );
}

function ddl(plain: string): string {
  return plain
    .replace(/\bINTEGER\s+PRIMARY\s+KEY(\s+AUTOINCREMENT)?\b/gi, 'BIGSERIAL PRIMARY KEY')
    .replace(/\bBLOB\b/gi, 'BYTEA')
    .replace(/\bINTEGER\b/gi, 'BIGINT')
    .replace(/\bTEXT\b/gi, 'TEXT COLLATE "C"')
    .replace(
      /\bCREATE\s+TABLE\s+(IF\s+NOT\s+EXISTS\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*\(/gi,
      (_m, ifNot: string | undefined, name: string) =>
        `CREATE TABLE ${ifNot ?? ''}${name} (rowid BIGSERIAL NOT NULL, `,
    );
}
