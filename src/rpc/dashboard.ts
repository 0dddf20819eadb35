/**
 * The web dashboard (`rpc.dashboard: true`): static files under `/dashboard/`, served from the
 * package's `src/rpc/dashboard/` folder (plain ES modules, no build step, nothing from a CDN). The
 * page is public like any static file; everything it shows comes through the JSON-RPC endpoint,
 * with the RPC's own authorisation (the page asks for the bearer token when the node wants one).
 */
import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';

export const DASHBOARD_DIR = path.join(import.meta.dirname, 'dashboard');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/**
 * Same-origin only: the page runs no inline script and loads nothing from elsewhere, and no other
 * site may frame it (its forms move money).
 */
const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'self'; connect-src 'self' ws: wss:; img-src 'self' data:; frame-ancestors 'none'; form-action 'none'",
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-cache',
};

/** Reads the files once at start-up: a handful of small files, and no path ever reaches the disk. */
function loadAssets(dir: string): Map<string, { body: Buffer; type: string }> {
  const assets = new Map<string, { body: Buffer; type: string }>();
  for (const name of fs.readdirSync(dir)) {
    const type = TYPES[path.extname(name)];
    if (type) assets.set(name, { body: fs.readFileSync(path.join(dir, name)), type });
  }
  if (!assets.has('index.html')) throw new Error(`dashboard: ${dir}/index.html is missing`);
  return assets;
}

export function installDashboard(app: FastifyInstance, dir = DASHBOARD_DIR): void {
  const assets = loadAssets(dir);
  app.get('/dashboard', (_req, reply) => reply.redirect('/dashboard/'));
  app.get('/dashboard/', (_req, reply) => {
    const index = assets.get('index.html')!;
    return reply.headers(SECURITY_HEADERS).type(index.type).send(index.body);
  });
  app.get<{ Params: { file: string } }>('/dashboard/:file', (req, reply) => {
    const asset = assets.get(req.params.file);
    if (!asset) return reply.code(404).type('text/plain; charset=utf-8').send('not found');
    return reply.headers(SECURITY_HEADERS).type(asset.type).send(asset.body);
  });
}

/**
 * The bearer of a WebSocket upgrade. A browser cannot set headers on a WebSocket, so the page
 * passes its token as `?access_token=` (RFC 6750 §2.3); a header, when present, wins.
 */
export function upgradeAuthorization(
  header: string | undefined,
  url: string | undefined,
): string | undefined {
  if (header) return header;
  const query = (url ?? '').split('?')[1];
  if (!query) return undefined;
  const token = new URLSearchParams(query).get('access_token');
  return token ? `Bearer ${token}` : undefined;
}
