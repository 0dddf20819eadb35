/** `info` module: `node_info`. */
import { toHexQuantity } from '../../codec/index.ts';
import { type MethodSpec, method } from '../method.ts';
import * as R from '../results.ts';
import type { ScriptJson } from '../schema.ts';

export interface UdtArgInfo {
  name: string;
  script: ScriptJson;
  auto_accept_amount: bigint | null;
  cell_deps: unknown[];
}

/** What `node_info` reports; the composition root supplies live values. */
export interface NodeInfoSource {
  version: string;
  commitHash: string;
  pubkey: string;
  features(): string[];
  nodeName: string | null;
  addresses(): string[];
  chainHash(): string;
  openChannelAutoAcceptMinCkbFundingAmount: bigint;
  autoAcceptChannelCkbFundingAmount: bigint;
  defaultFundingLockScript(): ScriptJson;
  tlcExpiryDelta: bigint;
  tlcMinValue: bigint;
  tlcFeeProportionalMillionths: bigint;
  channelCount(): number;
  pendingChannelCount(): number;
  peersCount(): number;
  /** Strand's: `ok` or `unreachable since <ISO time>`; null without the `ckb` service. */
  ckbRpcStatus?(): string | null;
  udtCfgInfos: UdtArgInfo[];
}

export function infoMethods(src: NodeInfoSource): MethodSpec[] {
  return [
    method({
      name: 'node_info',
      module: 'info',
      description:
        "The node's identity, version, addresses, chain, default channel terms, counts of channels and peers, and its UDT whitelist.",
      result: R.nodeInfoResult,
      params: null,
      handler: () => ({
        version: src.version,
        commit_hash: src.commitHash,
        pubkey: src.pubkey,
        features: src.features(),
        node_name: src.nodeName,
        addresses: src.addresses(),
        chain_hash: src.chainHash(),
        open_channel_auto_accept_min_ckb_funding_amount: toHexQuantity(
          src.openChannelAutoAcceptMinCkbFundingAmount,
        ),
        auto_accept_channel_ckb_funding_amount: toHexQuantity(src.autoAcceptChannelCkbFundingAmount),
        default_funding_lock_script: src.defaultFundingLockScript(),
        tlc_expiry_delta: toHexQuantity(src.tlcExpiryDelta),
        tlc_min_value: toHexQuantity(src.tlcMinValue),
        tlc_fee_proportional_millionths: toHexQuantity(src.tlcFeeProportionalMillionths),
        channel_count: toHexQuantity(src.channelCount()),
        pending_channel_count: toHexQuantity(src.pendingChannelCount()),
        peers_count: toHexQuantity(src.peersCount()),
        udt_cfg_infos: src.udtCfgInfos.map((u) => ({
          name: u.name,
          script: u.script,
          auto_accept_amount: u.auto_accept_amount === null ? null : toHexQuantity(u.auto_accept_amount),
          cell_deps: u.cell_deps,
        })),
        // Strand's field (not in fnn's node_info): whether the CKB RPC answers.
        ckb_rpc_status: src.ckbRpcStatus?.() ?? null,
      }),
    }),
  ];
}
