/**
 * The reference node (@nervosnetwork/fiber-js 0.8.1, the Rust node compiled to WebAssembly) in
 * headless Chromium, as a test peer (`docs/reference/reference-node-harness.md`). It can
 * only dial, over WebSocket.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const ROOT = path.resolve(import.meta.dirname, '../..');
const FIBER_JS = path.join(ROOT, 'node_modules/@nervosnetwork/fiber-js/dist/index.js');

/**
 * Whether the reference node can run here. On CI (`CI` set, as `.ci/run` does) a missing part is
 * an error, not a skip: the interop levels are part of the default suite there.
 */
export function referenceAvailable(): boolean {
  const ok = fs.existsSync(CHROMIUM) && fs.existsSync(FIBER_JS);
  if (!ok && process.env.CI)
    throw new Error(
      `interop: ${fs.existsSync(CHROMIUM) ? FIBER_JS : CHROMIUM} is missing (CI runs these tests)`,
    );
  return ok;
}

const PAGE = `<!doctype html><html><body><script type="module">
import { Fiber } from '/fiber.js';
window.Fiber = Fiber;
window.ready = true;
</script></body></html>`;

export interface ReferenceNode {
  /** An RPC call on the reference node; results are its JSON. */
  call(method: string, params?: unknown[]): Promise<Record<string, unknown>>;
  errors: string[];
  logs: string[];
  /** Stops the node and starts it again on its database, dialling the peers it had dialled. */
  restart(): Promise<void>;
  close(): Promise<void>;
}

/** Serves the page with the cross-origin isolation the wasm node's SharedArrayBuffers need. */
function serve(): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const headers = {
      'Cross-Origin-Opener-Policy': 'same-origin',
      'Cross-Origin-Embedder-Policy': 'require-corp',
      'Cross-Origin-Resource-Policy': 'same-origin',
    };
    if (req.url === '/fiber.js') {
      res.writeHead(200, { ...headers, 'Content-Type': 'text/javascript' });
      fs.createReadStream(FIBER_JS).pipe(res);
      return;
    }
    res.writeHead(200, { ...headers, 'Content-Type': 'text/html' });
    res.end(PAGE);
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port;
      resolve({
        url: `http://127.0.0.1:${port}/`,
        close: () => new Promise<void>((r) => server.close(() => r())),
      });
    });
  });
}

export async function startReferenceNode(opts: {
  fiberSecretKey: Uint8Array;
  ckbSecretKey: Uint8Array;
  chainSpec: string;
  ckbRpcUrl: string;
  /**
   * `fiber.scripts` overrides, e.g. a Strand dev chain's FundingLock / CommitmentLock (its own
   * cell deps: fnn's dev defaults add tx0 output 5 as CkbAuth, which on a spec whose system
   * cells are only the bundled four is the special cell, spent by the dep-group tx).
   */
  scripts?: {
    name: string;
    codeHash: string;
    hashType: string;
    cellDeps: { txHash: string; index: number }[];
  }[];
  /** `ckb.udt_whitelist` entries (fnn v0.8's shape: each cell dep under `cell_dep`). */
  udtWhitelist?: {
    name: string;
    codeHash: string;
    hashType: string;
    args: string;
    cellDeps: { txHash: string; index: number }[];
    autoAcceptAmount?: bigint;
  }[];
}): Promise<ReferenceNode> {
  const site = await serve();
  let browser: Browser | undefined;
  try {
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        // Playwright already gives every launch a fresh profile directory.
      ],
    });
    const page: Page = await browser.newPage();
    const errors: string[] = [];
    const logs: string[] = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => logs.push(m.text()));
    const config = [
      'fiber:',
      '  listening_addr: "/ip4/127.0.0.1/tcp/8228"',
      '  announce_listening_addr: false',
      '  announce_private_addr: true',
      '  chain: dev',
      ...scriptsYaml(opts.scripts ?? []),
      'ckb:',
      `  rpc_url: "${opts.ckbRpcUrl}"`,
      '  tx_tracing_polling_interval_ms: 1000',
      ...udtWhitelistYaml(opts.udtWhitelist ?? []),
      'services: [fiber, rpc, ckb]',
    ].join('\n');
    // One database for the node's life: a restart (below) finds its channels again.
    const database = `/strand-${Date.now()}`;
    const invoke = (method: string, params: unknown[] = []) =>
      page.evaluate(
        async ([m, p]) => {
          const w = globalThis as unknown as {
            fiber: { invokeCommand(n: string, a: unknown[]): Promise<unknown> };
          };
          return (await w.fiber.invokeCommand(m, p)) as Record<string, unknown>;
        },
        [method, params] as const,
      );
    const boot = async () => {
      await page.goto(site.url);
      await page.waitForFunction('window.ready === true');
      await page.evaluate(
        async ([config, sk, ckb, spec, prefix]) => {
          type FiberLike = { start(...a: unknown[]): Promise<void> };
          const w = globalThis as unknown as { Fiber: new () => FiberLike; fiber: FiberLike };
          w.fiber = new w.Fiber();
          // start() may not settle promptly on failure (the error surfaces as a page error), so
          // the caller polls node_info instead of awaiting it.
          w.fiber
            .start(config, new Uint8Array(sk), new Uint8Array(ckb), spec, 'info', prefix)
            .catch(() => {});
        },
        [config, [...opts.fiberSecretKey], [...opts.ckbSecretKey], opts.chainSpec, database] as const,
      );
      for (let i = 0; ; i++) {
        try {
          await invoke('node_info');
          return;
        } catch (e) {
          if (i > 120)
            throw new Error(`reference node did not start: ${String(e)}; page errors: ${errors.join('; ')}`);
          await new Promise((r) => setTimeout(r, 500));
        }
      }
    };
    await boot();

    // fiber-js 0.8.1 has a race in the IPC between its node worker and its IndexedDB worker: under
    // CPU load a wait wakes on an empty reply and the node panics (`entered unreachable code` at
    // crates/fiber-store/src/browser.rs:335), whatever its peer sent. That panic, and only that
    // one, is a crash of the reference node's own plumbing: the harness restarts the node on its
    // database (as an operator restarts fnn), dials its peers again and repeats the call. It says
    // so on stderr, and gives up after three restarts. Any other panic fails the test.
    const peers: unknown[][] = [];
    let restarts = 0;
    let restarting: Promise<void> | null = null;
    let newLogsFrom = 0;
    const storagePanic = () =>
      logs.slice(newLogsFrom).some((l) => /fiber-store\/src\/browser\.rs/.test(l) && /panicked/.test(l));
    const restart = async (why: string) => {
      logs.push(`--- harness: restart (${why}) ---`);
      // A panic line from before the restart must not trigger another one.
      newLogsFrom = logs.length;
      await boot();
      for (const p of peers) await invoke('connect_peer', p).catch(() => {});
    };
    const call = async (method: string, params: unknown[] = []): Promise<Record<string, unknown>> => {
      try {
        const r = await invoke(method, params);
        if (method === 'connect_peer') peers.push(params);
        return r;
      } catch (e) {
        // A dead worker answers with its error event (then "Fiber panicked"), which may come before
        // its panic message reaches the console.
        if (!/Fiber panicked|ErrorEvent/.test(String(e))) throw e;
        for (let i = 0; i < 20 && !storagePanic(); i++) await new Promise((r) => setTimeout(r, 100));
        if (!storagePanic() || restarts >= 3) throw e;
        if (!restarting) {
          restarts++;
          console.error(
            `reference node: fiber-js's storage IPC panicked (its own race, crates/fiber-store/src/browser.rs); restart ${restarts} on its database`,
          );
          restarting = restart(`storage IPC panic ${restarts}`).finally(() => {
            restarting = null;
          });
        }
        await restarting;
        return call(method, params);
      }
    };
    const b = browser;
    return {
      call,
      errors,
      logs,
      restart: () => restart('asked by the test'),
      close: async () => {
        await b.close();
        await site.close();
      },
    };
  } catch (e) {
    await browser?.close();
    await site.close();
    throw e;
  }
}

/** `fiber.scripts` entries (YAML lines under `fiber:`, placed before the `ckb:` section). */
function scriptsYaml(
  scripts: {
    name: string;
    codeHash: string;
    hashType: string;
    cellDeps: { txHash: string; index: number }[];
  }[],
): string[] {
  if (!scripts.length) return [];
  return [
    '  scripts:',
    ...scripts.flatMap((s) => [
      `    - name: ${s.name}`,
      '      script:',
      `        code_hash: "${s.codeHash}"`,
      `        hash_type: ${s.hashType}`,
      '        args: "0x"',
      '      cell_deps:',
      ...s.cellDeps.flatMap((d) => [
        '        - cell_dep:',
        '            out_point:',
        `              tx_hash: "${d.txHash}"`,
        `              index: "0x${d.index.toString(16)}"`,
        '            dep_type: code',
      ]),
    ]),
  ];
}

/** `ckb.udt_whitelist` entries (YAML lines under `ckb:`). */
function udtWhitelistYaml(
  entries: {
    name: string;
    codeHash: string;
    hashType: string;
    args: string;
    cellDeps: { txHash: string; index: number }[];
    autoAcceptAmount?: bigint;
  }[],
): string[] {
  if (!entries.length) return [];
  return [
    '  udt_whitelist:',
    ...entries.flatMap((u) => [
      `    - name: ${u.name}`,
      '      script:',
      `        code_hash: "${u.codeHash}"`,
      `        hash_type: ${u.hashType}`,
      `        args: "${u.args}"`,
      '      cell_deps:',
      ...u.cellDeps.flatMap((d) => [
        '        - cell_dep:',
        '            out_point:',
        `              tx_hash: "${d.txHash}"`,
        `              index: "0x${d.index.toString(16)}"`,
        '            dep_type: code',
      ]),
      ...(u.autoAcceptAmount !== undefined ? [`      auto_accept_amount: ${u.autoAcceptAmount}`] : []),
    ]),
  ];
}
