/**
 * A CKB JSON-RPC endpoint that answers from recorded exchanges (test/chain/fixtures/, README
 * there): the double at the one boundary no machine here can run, a CKB node with a synced chain.
 * Each method answers with the exchanges given for it, in order, the last one repeating; an
 * exchange whose request lists params answers only those params. Unknown methods get CKB's
 * -32601. `down()` closes the port (connections refused, as a stopped node); `up()` reopens it.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';

export interface Exchange {
  name?: string;
  request: { method: string; params?: unknown[] };
  response: { result?: unknown; error?: { code: number; message: string; data?: unknown } };
}

const FIXTURES = path.join(import.meta.dirname, 'fixtures');

/** The exchanges of a fixture file, or the one named `name` in it. */
export function fixture(file: string): Exchange[] {
  const doc = JSON.parse(fs.readFileSync(path.join(FIXTURES, file), 'utf8')) as { exchanges: Exchange[] };
  return doc.exchanges;
}

export function exchange(file: string, name: string): Exchange {
  const e = fixture(file).find((x) => x.name === name);
  if (!e) throw new Error(`no exchange ${name} in ${file}`);
  return e;
}

export class FixtureChain {
  /** Every request received, in order. */
  readonly requests: { method: string; params: unknown[] }[] = [];
  private readonly queues = new Map<string, Exchange[]>();
  private server?: http.Server;
  private port = 0;

  static async start(exchanges: Exchange[] = []): Promise<FixtureChain> {
    const c = new FixtureChain();
    c.answer(...exchanges);
    await c.up();
    return c;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}/`;
  }

  /** Adds answers; for a method, those added first answer first. */
  answer(...exchanges: Exchange[]): this {
    for (const e of exchanges) {
      const q = this.queues.get(e.request.method) ?? [];
      q.push(e);
      this.queues.set(e.request.method, q);
    }
    return this;
  }

  /** Replaces every answer of `method`. */
  replace(method: string, ...exchanges: Exchange[]): this {
    this.queues.delete(method);
    return this.answer(...exchanges);
  }

  calls(method: string): unknown[][] {
    return this.requests.filter((r) => r.method === method).map((r) => r.params);
  }

  async up(): Promise<void> {
    const server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (d) => {
        body += d;
      });
      req.on('end', () => {
        const r = JSON.parse(body) as { id: unknown; method: string; params?: unknown[] };
        this.requests.push({ method: r.method, params: r.params ?? [] });
        const out = this.respond(r.method, r.params ?? []);
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ jsonrpc: '2.0', id: r.id, ...out }));
      });
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
  }

  async down(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    if (!s) return;
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }

  private respond(method: string, params: unknown[]): Exchange['response'] {
    const q = this.queues.get(method) ?? [];
    const matches = (e: Exchange) => !e.request.params || canonical(e.request.params) === canonical(params);
    const i = q.findIndex(matches);
    const e = q[i];
    if (!e) return { error: { code: -32601, message: 'Method not found' } };
    // The last matching answer repeats; earlier ones are used once.
    if (q.slice(i + 1).some(matches)) q.splice(i, 1);
    return e.response;
  }
}

/** JSON with object keys sorted: params match whatever order the client writes keys in. */
function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, x) =>
    x && typeof x === 'object' && !Array.isArray(x)
      ? Object.fromEntries(Object.entries(x).sort(([a], [b]) => a.localeCompare(b)))
      : x,
  );
}
