/**
 * Facts about the store itself: which node key it belongs to. Channels and their keys are bound
 * to the node identity, so opening a store with a different `fiber/sk` is refused instead of
 * running channels under a key the peers don't know.
 */
import { StoreError } from '../codec/index.ts';
import type { Db, DomainSchema } from './db.ts';

export const nodeMetaSchema: DomainSchema = {
  domain: 'node',
  migrations: [{ version: 1, up: 'CREATE TABLE node_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)' }],
};

export function checkNodeOwnership(db: Db, pubkeyHex: string): void {
  const row = db.prepare("SELECT value FROM node_meta WHERE key = 'node_pubkey'").get() as
    | { value: string }
    | undefined;
  if (!row) {
    db.prepare("INSERT INTO node_meta (key, value) VALUES ('node_pubkey', ?)").run(pubkeyHex);
    return;
  }
  if (row.value !== pubkeyHex) {
    throw new StoreError(
      `the store belongs to node ${row.value}, but fiber/sk is the key of ${pubkeyHex}; restore the matching fiber/sk`,
    );
  }
}
