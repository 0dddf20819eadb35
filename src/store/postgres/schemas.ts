/**
 * Several node stores in one Postgres database, one schema each (`strand devnet --store-url`: the
 * operator names one database, each node of the devnet keeps its tables in its own schema). A
 * node's store URL is the database's with the schema as its `search_path`, so the node's SQL,
 * its migrations and its lease table stay unqualified and land in that schema only.
 */
import pg from 'pg';
import { StoreError } from '../../codec/index.ts';

const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/;

function checkSchemaName(schema: string): void {
  if (!IDENTIFIER.test(schema))
    throw new StoreError(`schema name ${schema}: expected lower-case letters, digits and _ (at most 63)`);
}

/** `url` with `schema` as the session's search_path (node-postgres' `options` startup parameter). */
export function urlWithSchema(url: string, schema: string): string {
  checkSchemaName(schema);
  const u = new URL(url);
  if (/search_path/.test(u.searchParams.get('options') ?? ''))
    throw new StoreError('store.url already sets a search_path in options: one schema per node is set here');
  const options = [u.searchParams.get('options'), `-c search_path=${schema}`].filter(Boolean).join(' ');
  u.searchParams.set('options', options);
  return u.toString();
}

/** `url` without its password, for logs. */
export function redactedUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(an unparsable URL)';
  }
}

/**
 * Makes sure each schema exists in the database at `url`. `fresh`: each is dropped first with
 * everything in it (a new devnet: stores of a previous one would belong to other keys and chain).
 */
export async function prepareSchemas(
  url: string,
  schemas: string[],
  opts: { fresh: boolean },
): Promise<void> {
  for (const s of schemas) checkSchemaName(s);
  const client = new pg.Client({ connectionString: url });
  try {
    await client.connect();
  } catch (e) {
    throw new StoreError(`cannot reach the Postgres database ${redactedUrl(url)}: ${(e as Error).message}`);
  }
  try {
    for (const s of schemas) {
      if (opts.fresh) await client.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`);
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
    }
  } finally {
    await client.end().catch(() => {});
  }
}
