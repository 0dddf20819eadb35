// The thread that holds the node's Postgres connection (`pg-db.ts` is its other side). The
// node's code reads and writes its store synchronously, as it does SQLite: the main thread posts
// a request on the port, then sleeps on the shared flag (Atomics.wait) until this thread has run
// it on the server and posted the answer. Plain JavaScript: a worker does not get tsx's loader.
//
// It also keeps the leader lease: a second connection renews it on its own timer, so a main
// thread busy with a long synchronous job cannot let it lapse. Once the lease cannot be renewed
// before it runs out, every request fails with `lease lost` and the main thread is told to stop.
//
// Each request carries an id and its answer the same id: a request the main thread gave up on
// (it did not answer in time) is answered late, if ever, and that answer is not taken for another's.
import { parentPort, workerData } from 'node:worker_threads';
import pg from 'pg';

const { url, port, flag } = workerData;
const signal = new Int32Array(flag);

// What better-sqlite3 hands back: numbers for integers (bigint/count/sum), not strings.
const toNumber = (v) => {
  const n = Number(v);
  return Number.isSafeInteger(n) ? n : BigInt(v);
};
const types = {
  getTypeParser(oid, format) {
    if (oid === 20) return toNumber; // int8
    if (oid === 1700) return Number; // numeric
    return pg.types.getTypeParser(oid, format);
  },
};

const client = new pg.Client({ connectionString: url, types });
let broken = null;
client.on('error', (e) => connectionLost(e));

/**
 * The store's connection is gone (server restart, network, terminated backend): whatever was in
 * flight is rolled back by the server, and this process cannot know what a new connection would
 * find. A leader gives its lease up to the node (which exits, to be started again) rather than
 * stay leader of a store it can no longer write.
 */
function connectionLost(e) {
  if (broken) return;
  broken = `the Postgres store failed: ${e.message}`;
  if (lease) lost(broken);
}

/** A connection gone or going: SQLSTATE 08 (connection), 57P0x (shutdown), or the socket itself. */
const isConnectionError = (e) =>
  (typeof e.code === 'string' && /^08|^57P0/.test(e.code)) ||
  /Connection terminated|not queryable|ECONNRESET|ECONNREFUSED|EPIPE/.test(e.message);

/** Runs `fn` on the store's connection; a connection failure marks the store broken. */
async function onConnection(fn) {
  try {
    return await fn();
  } catch (e) {
    if (isConnectionError(e)) connectionLost(e);
    throw e;
  }
}

/** @type {{ key: string, holder: string, ttlMs: number, validUntil: number, gone?: boolean, timer?: NodeJS.Timeout, client: pg.Client } | undefined} */
let lease;

function param(v) {
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength);
  if (typeof v === 'bigint') return v.toString();
  if (typeof v === 'boolean') return v ? 1 : 0;
  return v;
}

function answer(msg) {
  port.postMessage(msg);
  Atomics.store(signal, 0, 1);
  Atomics.notify(signal, 0);
}

function leaseProblem() {
  if (lease && Date.now() >= lease.validUntil)
    return `lease lost: this node no longer holds the leader lease of ${lease.key}`;
  return null;
}

// Takes the lease if it is free, expired or already ours; answers whether we hold it now, and who does.
const ACQUIRE = `INSERT INTO strand_lease (node_key, holder, expires_at)
  VALUES ($1, $2, (extract(epoch FROM clock_timestamp()) * 1000)::bigint + $3)
  ON CONFLICT (node_key) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
  WHERE strand_lease.holder = excluded.holder OR strand_lease.expires_at < (extract(epoch FROM clock_timestamp()) * 1000)::bigint`;

async function tryLease(c, key, holder, ttlMs) {
  const started = Date.now();
  const r = await c.query(ACQUIRE, [key, holder, ttlMs]);
  if (r.rowCount === 1) return { held: true, validUntil: started + ttlMs - Math.min(1000, ttlMs / 4) };
  const who = await c.query('SELECT holder FROM strand_lease WHERE node_key = $1', [key]);
  return { held: false, holder: who.rows[0]?.holder };
}

function renewLater() {
  lease.timer = setTimeout(async () => {
    try {
      const r = await tryLease(lease.client, lease.key, lease.holder, lease.ttlMs);
      if (lease.gone) return;
      if (r.held) lease.validUntil = r.validUntil;
      else return lost(`the lease of ${lease.key} is held by ${r.holder}`);
    } catch (e) {
      if (Date.now() >= lease.validUntil) return lost(e.message);
    }
    if (lease.gone) return;
    if (Date.now() >= lease.validUntil) return lost('renewal came too late');
    renewLater();
  }, lease.ttlMs / 3);
}

function lost(reason) {
  if (lease.gone) return;
  lease.gone = true;
  clearTimeout(lease.timer);
  broken = `lease lost: ${reason}`;
  lease.validUntil = 0;
  parentPort.postMessage({ leaseLost: reason });
}

async function handle(req) {
  switch (req.op) {
    case 'connect':
      await client.connect();
      return {};
    case 'query': {
      const problem = broken ?? leaseProblem();
      if (problem) throw new Error(problem);
      return onConnection(async () => {
        if (req.before) await client.query(req.before);
        const r = await client.query({ name: req.name, text: req.sql, values: req.params.map(param) });
        return { rows: r.rows, rowCount: r.rowCount ?? 0 };
      });
    }
    case 'exec': {
      const problem = broken ?? leaseProblem();
      if (problem) throw new Error(problem);
      return onConnection(async () => {
        if (req.before) await client.query(req.before);
        await client.query(req.sql);
        return {};
      });
    }
    case 'abort': {
      // The main thread gave up waiting (a query hung on a lock, a server that stopped answering):
      // the store is refused from now on, the lease is no longer renewed (it runs out: a standby
      // waits that long), and the hung statement's session is ended on the server, so nothing it
      // started can commit after this node has stopped.
      broken = `the store was abandoned: ${req.reason}`;
      if (lease) {
        lease.gone = true;
        clearTimeout(lease.timer);
      }
      const pid = client.processID;
      if (pid) {
        const killer = lease?.client ?? new pg.Client({ connectionString: url });
        killer.on('error', () => {});
        try {
          if (!lease) await killer.connect();
          await killer.query('SELECT pg_terminate_backend($1)', [pid]);
        } finally {
          if (!lease) await killer.end().catch(() => {});
        }
      }
      return {};
    }
    case 'lease': {
      if (lease) throw new Error(`this store already holds the lease of ${lease.key}`);
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      c.on('error', () => {});
      await c.query(
        'CREATE TABLE IF NOT EXISTS strand_lease (node_key TEXT PRIMARY KEY, holder TEXT NOT NULL, expires_at BIGINT NOT NULL)',
      );
      const r = await tryLease(c, req.key, req.holder, req.ttlMs);
      if (!r.held) {
        await c.end();
        return { held: false, holder: r.holder };
      }
      lease = { key: req.key, holder: req.holder, ttlMs: req.ttlMs, validUntil: r.validUntil, client: c };
      renewLater();
      return { held: true };
    }
    case 'close': {
      if (lease) {
        clearTimeout(lease.timer);
        // Handing over at once: a standby need not wait for the lease to run out.
        await lease.client
          .query('DELETE FROM strand_lease WHERE node_key = $1 AND holder = $2', [lease.key, lease.holder])
          .catch(() => {});
        await lease.client.end().catch(() => {});
      }
      await client.end().catch(() => {});
      return {};
    }
    default:
      throw new Error(`unknown request ${req.op}`);
  }
}

// A bug here must not leave a leader that looks alive: the store is refused from now on, and a
// lease holder is told to stop, as when the connection breaks.
process.on('uncaughtException', (e) => connectionLost(e));
process.on('unhandledRejection', (e) => connectionLost(e instanceof Error ? e : new Error(String(e))));

port.on('message', async (req) => {
  try {
    answer({ id: req.id, ok: await handle(req) });
  } catch (e) {
    answer({ id: req.id, error: e.message, code: e.code });
  }
});
