/**
 * Persistence of the graph domain: every accepted broadcast message under its cursor (the
 * reference keeps the same: sync, pagination and restart all read this ordered set), and the
 * payment history records used for route probabilities.
 */
import { bytesToHex } from '../codec/index.ts';
import type { Db, DomainSchema } from '../store/index.ts';
import { CURSOR_TYPE } from './cursor.ts';
import type { Direction, TimedResult } from './history.ts';
import {
  type BroadcastMessage,
  decodeBroadcastMessage,
  encodeBroadcastMessage,
  encodeOutPoint,
} from './messages.ts';

export const graphSchema: DomainSchema = {
  domain: 'graph',
  migrations: [
    {
      version: 1,
      up: `
        CREATE TABLE graph_messages (
          msg_key TEXT PRIMARY KEY,
          cursor  BLOB NOT NULL,
          kind    INTEGER NOT NULL,
          body    BLOB NOT NULL
        );
        CREATE INDEX graph_messages_cursor ON graph_messages (cursor, msg_key);
        CREATE INDEX graph_messages_kind_cursor ON graph_messages (kind, cursor, msg_key);
        CREATE TABLE graph_history (
          outpoint       TEXT NOT NULL,
          direction      TEXT NOT NULL,
          fail_time      INTEGER NOT NULL,
          fail_amount    TEXT NOT NULL,
          success_time   INTEGER NOT NULL,
          success_amount TEXT NOT NULL,
          PRIMARY KEY (outpoint, direction)
        );
      `,
    },
  ],
};

/** One key per message identity: a CA per outpoint, a CU per outpoint and side, an NA per node. */
export function messageKey(m: BroadcastMessage): string {
  switch (m.type) {
    case 'ChannelAnnouncement':
      return `ca:${bytesToHex(encodeOutPoint(m.value.channelOutpoint))}`;
    case 'ChannelUpdate':
      return `cu:${bytesToHex(encodeOutPoint(m.value.channelOutpoint))}:${(m.value.messageFlags & 1) + 1}`;
    case 'NodeAnnouncement':
      return `na:${bytesToHex(m.value.nodeId, false)}`;
  }
}

export interface StoredMessage {
  cursor: Uint8Array;
  message: BroadcastMessage;
}

export class GraphStore {
  private readonly stmts;

  constructor(private readonly db: Db) {
    this.stmts = {
      put: db.prepare(
        'INSERT INTO graph_messages (msg_key, cursor, kind, body) VALUES (?, ?, ?, ?) ' +
          'ON CONFLICT (msg_key) DO UPDATE SET cursor = excluded.cursor, kind = excluded.kind, body = excluded.body',
      ),
      get: db.prepare('SELECT cursor, body FROM graph_messages WHERE msg_key = ?'),
      del: db.prepare('DELETE FROM graph_messages WHERE msg_key = ?'),
      after: db.prepare(
        'SELECT cursor, body FROM graph_messages WHERE cursor > ? ORDER BY cursor, msg_key LIMIT ?',
      ),
      afterKind: db.prepare(
        'SELECT cursor, body FROM graph_messages WHERE kind = ? AND cursor > ? ORDER BY cursor, msg_key LIMIT ?',
      ),
      all: db.prepare('SELECT cursor, body FROM graph_messages ORDER BY cursor, msg_key'),
      latest: db.prepare('SELECT cursor FROM graph_messages ORDER BY cursor DESC LIMIT 1'),
      newest: db.prepare(
        'SELECT cursor, body FROM graph_messages ORDER BY cursor DESC, msg_key DESC LIMIT ?',
      ),
      histPut: db.prepare(
        'INSERT INTO graph_history (outpoint, direction, fail_time, fail_amount, success_time, success_amount) ' +
          'VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (outpoint, direction) DO UPDATE SET fail_time = excluded.fail_time, ' +
          'fail_amount = excluded.fail_amount, success_time = excluded.success_time, success_amount = excluded.success_amount',
      ),
      histDel: db.prepare('DELETE FROM graph_history WHERE outpoint = ? AND direction = ?'),
      histAll: db.prepare('SELECT * FROM graph_history'),
    };
  }

  put(cursor: Uint8Array, message: BroadcastMessage): void {
    const kind =
      message.type === 'ChannelAnnouncement'
        ? CURSOR_TYPE.ChannelAnnouncement
        : message.type === 'ChannelUpdate'
          ? CURSOR_TYPE.ChannelUpdate
          : CURSOR_TYPE.NodeAnnouncement;
    this.stmts.put.run(
      messageKey(message),
      Buffer.from(cursor),
      kind,
      Buffer.from(encodeBroadcastMessage(message)),
    );
  }

  get(key: string): StoredMessage | undefined {
    const row = this.stmts.get.get(key) as { cursor: Buffer; body: Buffer } | undefined;
    return row ? toStored(row) : undefined;
  }

  delete(key: string): void {
    this.stmts.del.run(key);
  }

  /** Messages strictly after `cursor`, ascending; `kind` restricts to one cursor type. */
  after(cursor: Uint8Array, limit: number, kind?: number): StoredMessage[] {
    const rows = (
      kind === undefined
        ? this.stmts.after.all(Buffer.from(cursor), limit)
        : this.stmts.afterKind.all(kind, Buffer.from(cursor), limit)
    ) as { cursor: Buffer; body: Buffer }[];
    return rows.map(toStored);
  }

  all(): StoredMessage[] {
    return (this.stmts.all.all() as { cursor: Buffer; body: Buffer }[]).map(toStored);
  }

  /** The newest `limit` messages, newest first. */
  newest(limit: number): StoredMessage[] {
    return (this.stmts.newest.all(limit) as { cursor: Buffer; body: Buffer }[]).map(toStored);
  }

  latestCursor(): Uint8Array | undefined {
    const row = this.stmts.latest.get() as { cursor: Buffer } | undefined;
    return row ? new Uint8Array(row.cursor) : undefined;
  }

  transaction<T>(fn: () => T): T {
    return this.db.transaction(fn)();
  }

  // ---- payment history ----

  saveHistory(outpoint: string, d: Direction, r: TimedResult | null): void {
    if (r === null) this.stmts.histDel.run(outpoint, d);
    else
      this.stmts.histPut.run(
        outpoint,
        d,
        r.failTime,
        r.failAmount.toString(),
        r.successTime,
        r.successAmount.toString(),
      );
  }

  loadHistory(): { outpoint: string; direction: Direction; result: TimedResult }[] {
    return (
      this.stmts.histAll.all() as {
        outpoint: string;
        direction: Direction;
        fail_time: number;
        fail_amount: string;
        success_time: number;
        success_amount: string;
      }[]
    ).map((r) => ({
      outpoint: r.outpoint,
      direction: r.direction,
      result: {
        failTime: r.fail_time,
        failAmount: BigInt(r.fail_amount),
        successTime: r.success_time,
        successAmount: BigInt(r.success_amount),
      },
    }));
  }
}

function toStored(row: { cursor: Buffer; body: Buffer }): StoredMessage {
  return { cursor: new Uint8Array(row.cursor), message: decodeBroadcastMessage(new Uint8Array(row.body)) };
}
