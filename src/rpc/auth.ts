/**
 * Bearer-token authorisation with Biscuit (seed §Authentication). A token is verified against
 * `rpc.auth_public_key`; the method's rule from the permission table is then evaluated as the
 * authoriser policy `allow if <fact>`, with the current time supplied as `time(<now>)` so tokens
 * may carry expiry checks. Any failure gives the same answer, -32999 Unauthorized: the caller
 * learns nothing about why.
 */
import type { Biscuit, Authorizer as BiscuitAuthorizer, Fact } from '@biscuit-auth/biscuit-wasm';
import type { BiscuitModule } from './biscuit.ts';
import { loadBiscuit } from './biscuit.ts';
import { PERMISSIONS, permissionFact } from './permissions.ts';

const RUN_LIMITS = { max_facts: 1000, max_iterations: 100, max_time_micro: 200_000 };

export type AuthOutcome = { ok: true; callerNodeId?: string } | { ok: false; reason: string };

export interface Authorizer {
  /** Whether tokens are checked at all (a public key is configured). */
  readonly enabled: boolean;
  check(method: string, authorization: string | undefined): AuthOutcome;
  /** Whether the header carries a valid, unrevoked token at all (whatever its rights). */
  authenticate(authorization: string | undefined): boolean;
}

/** Auth off: every method with a rule is allowed (no identity). */
export const OPEN_ACCESS: Authorizer = {
  enabled: false,
  check: (method) =>
    PERMISSIONS[method] ? { ok: true } : { ok: false, reason: `no permission rule for ${method}` },
  authenticate: () => true,
};

export async function createAuthorizer(publicKey: string, revokedIds: string[] = []): Promise<Authorizer> {
  const b = await loadBiscuit();
  const root = parsePublicKey(b, publicKey);
  const revoked = new Set(revokedIds.map((id) => id.toLowerCase()));
  const nodeRule = b.Rule.fromString('caller($id) <- node($id)');
  /** Parses and verifies the bearer token; throws when missing, malformed, forged or revoked. */
  const verify = (authorization: string | undefined): Biscuit => {
    if (!authorization?.startsWith('Bearer ')) throw new Error('missing bearer token');
    const token = b.Biscuit.fromBase64(authorization.slice(7).trim(), root);
    for (const id of token.getRevocationIdentifiers() as string[]) {
      if (revoked.has(String(id).toLowerCase())) {
        token.free();
        throw new Error('revoked token');
      }
    }
    return token;
  };
  return {
    enabled: true,
    authenticate(authorization) {
      try {
        verify(authorization).free();
        return true;
      } catch {
        return false;
      }
    },
    check(method, authorization) {
      const permission = PERMISSIONS[method];
      if (!permission) return { ok: false, reason: `no permission rule for ${method}` };
      let token: Biscuit | undefined;
      let authz: BiscuitAuthorizer | undefined;
      try {
        token = verify(authorization);
        const builder = new b.AuthorizerBuilder();
        builder.addCode(`time(${new Date().toISOString()}); allow if ${permissionFact(permission)};`);
        authz = builder.buildAuthenticated(token);
        // authorize() and query() run under a 1 ms default time limit that the wasm build hits
        // on a loaded machine (it reports RunLimit Timeout); give evaluation a sane bound instead.
        authz.authorizeWithLimits(RUN_LIMITS);
        if (!permission.needsNodeIdentity) return { ok: true };
        const ids = authz.queryWithLimits(nodeRule, RUN_LIMITS).map((f: Fact) => String(f.terms()[0]));
        if (ids.length !== 1) return { ok: false, reason: 'token must carry exactly one node() fact' };
        return { ok: true, callerNodeId: ids[0] };
      } catch (e) {
        return { ok: false, reason: describe(e) };
      } finally {
        authz?.free();
        token?.free();
      }
    },
  };
}

function parsePublicKey(b: BiscuitModule, text: string) {
  const m = /^ed25519\/([0-9a-fA-F]{64})$/.exec(text);
  if (!m) throw new Error(`rpc.auth_public_key: expected ed25519/<64 hex chars>, got '${text}'`);
  return b.PublicKey.fromString(m[1]!, b.SignatureAlgorithm.Ed25519);
}

function describe(e: unknown): string {
  if (e instanceof Error) return e.message;
  try {
    return JSON.stringify(e);
  } catch {
    return String(e);
  }
}

/** Operator tooling: a new root key pair, as `ed25519/<hex>` strings. */
export async function generateKeyPair(): Promise<{ privateKey: string; publicKey: string }> {
  const b = await loadBiscuit();
  const kp = new b.KeyPair(b.SignatureAlgorithm.Ed25519);
  return { privateKey: kp.getPrivateKey().toString(), publicKey: kp.getPublicKey().toString() };
}

export interface MintOptions {
  /** Datalog facts such as `read("node")`, `write("payments")`, `node("Qm…")`. */
  facts: string[];
  /** Optional expiry: adds `check if time($t), $t <= <expires>`. */
  expires?: Date;
}

/** Mints a token signed by the root private key (`ed25519-private/<hex>` or bare hex). */
export async function mintToken(privateKey: string, opts: MintOptions): Promise<string> {
  const b = await loadBiscuit();
  const key = privateKey.includes('/')
    ? b.PrivateKey.fromString(privateKey)
    : b.PrivateKey.fromBytes(Uint8Array.from(Buffer.from(privateKey, 'hex')), b.SignatureAlgorithm.Ed25519);
  const builder = new b.BiscuitBuilder();
  const code = opts.facts.map((f) => `${f.trim().replace(/;$/, '')};`);
  if (opts.expires) code.push(`check if time($t), $t <= ${opts.expires.toISOString()};`);
  builder.addCode(code.join('\n'));
  return builder.build(key).toBase64();
}
