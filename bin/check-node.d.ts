/** Types of `check-node.js` (plain JavaScript: it runs before the TypeScript loader). */
export declare function requiredNode(): string;
export declare function nodeVersionProblem(version: string, range: string): string | undefined;
