/**
 * The `cch:` section (fnn v0.8's `CchConfig`, same names and defaults): where the LND node is,
 * the wrapped-BTC token, fees and expiries. The hub runs only when `services` lists `cch`, and
 * then this section must be there: without it the node refuses to start.
 */
import { z } from 'zod';
import type { ScriptJson } from './order.ts';

const uintNum = z
  .union([z.bigint(), z.number().int()])
  .transform((v) => BigInt(v))
  .pipe(z.bigint().nonnegative().max(BigInt(Number.MAX_SAFE_INTEGER)))
  .transform(Number);
const uint64 = z
  .union([z.bigint(), z.number().int()])
  .transform((v) => BigInt(v))
  .pipe(
    z
      .bigint()
      .nonnegative()
      .max((1n << 64n) - 1n),
  );

/** Hex in lower case: orders echo the script, and the RPC writes hex in lower case only. */
const script = z.object({
  code_hash: z
    .string()
    .regex(/^0x[0-9a-fA-F]{64}$/, { error: 'expected 0x + 32-byte hex' })
    .transform((s) => s.toLowerCase()),
  hash_type: z.enum(['type', 'data', 'data1', 'data2']),
  args: z
    .string()
    .regex(/^0x([0-9a-fA-F]{2})*$/, { error: 'expected 0x + hex bytes' })
    .transform((s) => s.toLowerCase()),
});

export const cchSection = z.object({
  base_dir: z.string().optional(),
  lnd_rpc_url: z.string().default('https://127.0.0.1:10009'),
  lnd_cert_path: z.string().optional(),
  lnd_macaroon_path: z.string().optional(),
  wrapped_btc_type_script_args: z.string().optional(),
  /** fnn reads it as JSON text; the YAML file may also give the mapping itself. */
  wrapped_btc_type_script: z
    .union([
      z.string().transform((s, ctx) => {
        try {
          return JSON.parse(s);
        } catch {
          ctx.addIssue({ code: 'custom', message: 'expected a Script as JSON' });
          return z.NEVER;
        }
      }),
      z.unknown(),
    ])
    .pipe(script)
    .optional(),
  order_expiry_delta_seconds: uintNum.default(36 * 3600),
  base_fee_sats: uint64.default(0n),
  fee_rate_per_million_sats: uint64.default(1n),
  btc_final_tlc_expiry_delta_blocks: uintNum.default(180),
  ckb_final_tlc_expiry_delta_seconds: uintNum.default(30 * 3600),
  min_outgoing_invoice_expiry_delta_seconds: uintNum.default(6 * 3600),
  fiber_rpc_url: z.string().optional(),
  /** Strand: a Biscuit token for `fiber_rpc_url` when that node has RPC auth on. */
  fiber_rpc_token: z.string().optional(),
});

export type CchSection = z.output<typeof cchSection>;

export interface CchConfig {
  lndRpcUrl: string;
  lndCertPath?: string;
  lndMacaroonPath?: string;
  wrappedBtcTypeScript: ScriptJson;
  orderExpiryDeltaSeconds: number;
  baseFeeSats: bigint;
  feeRatePerMillionSats: bigint;
  btcFinalTlcExpiryDeltaBlocks: number;
  ckbFinalTlcExpiryDeltaSeconds: number;
  minOutgoingInvoiceExpiryDeltaSeconds: number;
  fiberRpcUrl?: string;
  fiberRpcToken?: string;
}

/** What `services: [cch]` needs, named, so the refusal tells what to add. */
export function resolveCchConfig(section: CchSection | undefined, baseDir: string): CchConfig {
  if (!section)
    throw new Error(
      'the cch service needs a `cch:` section: cch.lnd_rpc_url, cch.lnd_cert_path, cch.lnd_macaroon_path (the LND node) and cch.wrapped_btc_type_script (the wrapped-BTC UDT)',
    );
  if (!section.wrapped_btc_type_script)
    throw new Error(
      'cch.wrapped_btc_type_script is required: the full type script of the wrapped-BTC UDT as JSON ({"code_hash":…,"hash_type":…,"args":…})',
    );
  const dir = section.base_dir ?? `${baseDir}/cch`;
  // fnn resolves relative credential paths against the cch base directory.
  const resolve = (p?: string) => (p === undefined ? undefined : p.startsWith('/') ? p : `${dir}/${p}`);
  return {
    lndRpcUrl: section.lnd_rpc_url,
    lndCertPath: resolve(section.lnd_cert_path),
    lndMacaroonPath: resolve(section.lnd_macaroon_path),
    wrappedBtcTypeScript: section.wrapped_btc_type_script,
    orderExpiryDeltaSeconds: section.order_expiry_delta_seconds,
    baseFeeSats: section.base_fee_sats,
    feeRatePerMillionSats: section.fee_rate_per_million_sats,
    btcFinalTlcExpiryDeltaBlocks: section.btc_final_tlc_expiry_delta_blocks,
    ckbFinalTlcExpiryDeltaSeconds: section.ckb_final_tlc_expiry_delta_seconds,
    minOutgoingInvoiceExpiryDeltaSeconds: section.min_outgoing_invoice_expiry_delta_seconds,
    fiberRpcUrl: section.fiber_rpc_url,
    fiberRpcToken: section.fiber_rpc_token,
  };
}
