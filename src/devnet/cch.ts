/**
 * `strand devnet --cch`: the cross-chain hub on a devnet. The first node runs the hub
 * (`services: [..., cch]`); its Lightning node is the LND double, served where LND listens by
 * default (127.0.0.1:10009 unless `--lnd-port` says otherwise), with its certificate and macaroon in
 * `<dir>/lnd/`; its control endpoint (one port up) lets a person play the outside Lightning
 * payer and payee. The first two nodes get a test-UDT channel each way: the wrapped BTC.
 */
import fs from 'node:fs';
import type http from 'node:http';
import path from 'node:path';
import { LndDouble } from './lnd-double.ts';
import { startLndDoubleControl } from './lnd-double-control.ts';
import type { Topology } from './topology.ts';

export interface DevnetLightning {
  lndUrl: string;
  controlUrl: string;
  cchSection(wrappedBtc: { code_hash: string; hash_type: string; args: string }): Record<string, unknown>;
  stop(): Promise<void>;
}

/** The double listens on `lndPort` (LND's default: 10009), its control endpoint on the next port. */
export async function startDevnetLightning(dir: string, lndPort: number): Promise<DevnetLightning> {
  const double = await LndDouble.start(lndPort, ensureDir(path.join(dir, 'lnd')));
  let control: http.Server;
  try {
    control = await startLndDoubleControl(double, lndPort + 1);
  } catch (e) {
    await double.stop();
    throw e;
  }
  return {
    lndUrl: double.url,
    controlUrl: `http://127.0.0.1:${lndPort + 1}`,
    cchSection: (wrappedBtc) => ({
      lnd_rpc_url: double.url,
      lnd_cert_path: double.certPath,
      lnd_macaroon_path: double.macaroonPath,
      wrapped_btc_type_script: wrappedBtc,
    }),
    async stop() {
      await new Promise((r) => control.close(r));
      await double.stop();
    },
  };
}

function ensureDir(d: string): string {
  fs.mkdirSync(d, { recursive: true });
  return d;
}

/** The wrapped-BTC channels of a swap devnet: 1 000 000 test-UDT units (sats) each way. */
export function withSwapChannels(t: Topology, hub: string, peer: string): Topology {
  const has = (from: string, to: string) =>
    t.channels.some((c) => c.from === from && c.to === to && c.udt === true);
  const add = [
    ...(has(hub, peer)
      ? []
      : [{ from: hub, to: peer, funding: 1_000_000, udt: true as const, public: true }]),
    ...(has(peer, hub)
      ? []
      : [{ from: peer, to: hub, funding: 1_000_000, udt: true as const, public: true }]),
  ];
  return { ...t, channels: [...t.channels, ...add] };
}
