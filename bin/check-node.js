// The Node.js version check of the `strand` command, in plain JavaScript that any Node parses:
// it runs before the TypeScript loader, which itself needs a recent Node.
import { readFileSync } from 'node:fs';

/** `engines.node` of package.json: the least version the dependencies need (`>=X.Y.Z`). */
export function requiredNode() {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
  return pkg.engines.node;
}

/** Why `version` (e.g. `20.19.1`) does not satisfy `range` (`>=20.19.0`), or undefined when it does. */
export function nodeVersionProblem(version, range) {
  const m = /^>=\s*(\d+)\.(\d+)\.(\d+)$/.exec(range);
  if (!m) return undefined; // a range this check does not know: npm's own check applies
  const want = m.slice(1).map(Number);
  const have = version.replace(/^v/, '').split('.').map(Number);
  for (let i = 0; i < 3; i++) {
    if ((have[i] ?? 0) > want[i]) return undefined;
    if ((have[i] ?? 0) < want[i])
      return (
        `strand needs Node.js ${range.replace('>=', '>= ')} (its dependencies do), but this is Node.js ${version}.\n` +
        'Install a newer Node.js (22 LTS recommended, e.g. `nvm install 22`) and run `npm ci` again.'
      );
  }
  return undefined;
}
