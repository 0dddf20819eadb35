/**
 * The CKB networks a node can run on, each a preset of what fnn v0.8 ships in its published
 * configuration (`config/testnet/config.yml`, `config/mainnet/config.yml` at tag v0.8.0; see
 * docs/chain.md): the genesis hash the node checks and announces, the channel lock scripts with
 * their cell deps (in fnn's `fiber.scripts` shape), the default UDT whitelist and CKB RPC URL.
 * The dev chain is one more preset whose scripts the chain itself names (`get_dev_scripts`).
 */
export type NetworkName = 'mainnet' | 'testnet' | 'dev';
export const NETWORK_NAMES: readonly NetworkName[] = ['mainnet', 'testnet', 'dev'];

export interface NetworkPreset {
  name: NetworkName;
  /** Genesis block hash; unset for a dev chain (taken from the chain itself). */
  chainHash?: string;
  /** Address prefix of the wallet: `ckb` on mainnet, `ckt` elsewhere. */
  addressPrefix: 'ckb' | 'ckt';
  /** `ckb.rpc_url` when the configuration names none. */
  defaultRpcUrl: string;
  /** Channel scripts in `fiber.scripts` form; empty: ask the chain (`get_dev_scripts`). */
  scripts: unknown[];
  /** `ckb.udt_whitelist` when the configuration names none. */
  udtWhitelist: unknown[];
}

/** The type-id script's code hash ("TYPE_ID" in ASCII, right-aligned). */
export const TYPE_ID_CODE_HASH = '0x00000000000000000000000000000000000000000000000000545950455f4944';

const typeIdDep = (args: string) => ({
  type_id: { code_hash: TYPE_ID_CODE_HASH, hash_type: 'type', args },
});
const codeDep = (txHash: string) => ({
  cell_dep: { out_point: { tx_hash: txHash, index: '0x0' }, dep_type: 'code' },
});
const lock = (name: string, codeHash: string, typeIdArgs: string, authTx: string) => ({
  name,
  script: { code_hash: codeHash, hash_type: 'type', args: '0x' },
  // The lock's code found by its type id (it may be upgraded in place), and ckb-auth, which
  // the lock calls for signature checks, at a fixed out point.
  cell_deps: [typeIdDep(typeIdArgs), codeDep(authTx)],
});

const TESTNET_AUTH_TX = '0x12c569a258dd9c5bd99f632bb8314b1263b90921ba31496467580d6b79dd14a7';
const MAINNET_AUTH_TX = '0x95006eee7b4c0c8ad66e0514c88ed0ae43fc8db27793427de86a348ec720b9d6';

export const NETWORKS: Record<NetworkName, NetworkPreset> = {
  testnet: {
    name: 'testnet',
    chainHash: '0x10639e0895502b5688a6be8cf69460d76541bfa4821629d86d62ba0aae3f9606',
    addressPrefix: 'ckt',
    defaultRpcUrl: 'https://testnet.ckbapp.dev/',
    scripts: [
      lock(
        'FundingLock',
        '0x6c67887fe201ee0c7853f1682c0b77c0e6214044c156c7558269390a8afa6d7c',
        '0x3cb7c0304fe53f75bb5727e2484d0beae4bd99d979813c6fc97c3cca569f10f6',
        TESTNET_AUTH_TX,
      ),
      lock(
        'CommitmentLock',
        '0x740dee83f87c6f309824d8fd3fbdd3c8380ee6fc9acc90b1a748438afcdf81d8',
        '0xf7e458887495cf70dd30d1543cad47dc1dfe9d874177bf19291e4db478d5751b',
        TESTNET_AUTH_TX,
      ),
    ],
    udtWhitelist: [
      {
        name: 'RUSD',
        script: {
          code_hash: '0x1142755a044bf2ee358cba9f2da187ce928c91cd4dc8692ded0337efa677d21a',
          hash_type: 'type',
          args: '0x878fcc6f1f08d48e87bb1c3b3d5083f23f8a39c5d5c764f253b55b998526439b',
        },
        cell_deps: [typeIdDep('0x97d30b723c0b2c66e9cb8d4d0df4ab5d7222cbb00d4a9a2055ce2e5d7f0d8b0f')],
        auto_accept_amount: 1_000_000_000,
      },
    ],
  },
  mainnet: {
    name: 'mainnet',
    chainHash: '0x92b197aa1fba0f63633922c61c92375c9c074a93e85963554f5499fe1450d0e5',
    addressPrefix: 'ckb',
    // fnn's mainnet config points at a node of one's own: a public one is not to be trusted.
    defaultRpcUrl: 'http://127.0.0.1:8114/',
    scripts: [
      lock(
        'FundingLock',
        '0xe45b1f8f21bff23137035a3ab751d75b36a981deec3e7820194b9c042967f4f1',
        '0x64818d82a372312fb007c480391e1b9759d21b2c7f7959b9c177d72cdc243394',
        MAINNET_AUTH_TX,
      ),
      lock(
        'CommitmentLock',
        '0x2d45c4d3ed3e942f1945386ee82a5d1b7e4bb16d7fe1ab015421174ab747406c',
        '0xdb16e6dcb17f670e5fb7c556d81e522ec5edb069ad2fa3e898e7ccea6c26a39f',
        MAINNET_AUTH_TX,
      ),
    ],
    udtWhitelist: [
      {
        name: 'USDI',
        script: {
          code_hash: '0xbfa35a9c38a676682b65ade8f02be164d48632281477e36f8dc2f41f79e56bfc',
          hash_type: 'type',
          args: '0xd591ebdc69626647e056e13345fd830c8b876bb06aa07ba610479eb77153ea9f',
        },
        cell_deps: [typeIdDep('0x9105ea69838511ca609518d27855c53fed1b5ffaff4cfb334f58b40627d211c4')],
        auto_accept_amount: 10_000_000,
      },
    ],
  },
  dev: {
    name: 'dev',
    addressPrefix: 'ckt',
    defaultRpcUrl: 'http://127.0.0.1:8114',
    scripts: [],
    udtWhitelist: [],
  },
};

/** The network a `fiber.chain` value means (fnn: `mainnet`, `testnet`, else a dev chain spec). */
export function networkOfChain(chain: string): NetworkName {
  return chain === 'mainnet' || chain === 'testnet' ? chain : 'dev';
}
