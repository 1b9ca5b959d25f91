/**
 * The families of the template miner (`miner.ts`) and how one is found: their shapes (a family, its variants, the
 * parse tree's nodes), the index of families by a key, and the pure functions over tokens that make those keys —
 * routing, sibling and skeleton keys, a variant's key and template — and the similarity threshold. The miner owns
 * the state and changes it; this module only reads tokens and families.
 */
import { isUnitAfter, isVariable, WILDCARD } from './masking.js';

/** A message template (a variant of a family) and the messages it has absorbed. */
export interface LogCluster {
  /** Unique for the miner's lifetime, in creation order; never reused after eviction or merge. */
  readonly id: number;
  /** Masked tokens with `<*>` at variable positions. */
  readonly tokens: string[];
  /** Messages absorbed since creation (merged templates included). */
  count: number;
  /** The example given when the template was created, capped in length. */
  readonly example: string;
}

export interface TreeNode {
  children: Map<string, TreeNode>;
  /** Only on leaves. */
  families: Family[] | null;
}

export interface Variant extends LogCluster {
  family: Family;
  key: string;
}

export interface Family {
  /** Template: `<*>` at variable positions; tracked positions hold the value of the family's first message. */
  tokens: string[];
  /** Positions whose words make variants, with the values seen. */
  tracked: Map<number, Set<string>>;
  /**
   * Variable positions whose every message had the same unmatched brackets there, with the wildcard shown for
   * them (`<*>)`, `(<*>`; see {@link wildcardFor}), so that a template stays as balanced as its messages.
   */
  shapes: Map<number, string>;
  variants: Map<string, Variant>;
  count: number;
  /** Creation order, for ties. */
  order: number;
  leaf: Family[];
  /** Keys under which it is found from other leaves (see `siblingKey`, `skeletonKey`), or `null`. */
  siblingKey: string | null;
  skeletonKey: string | null;
}

/** Families by a key; a family is listed once per key. */
export class FamilyIndex {
  private readonly byKey = new Map<string, Family[]>();

  get(key: string): Family[] | undefined {
    return this.byKey.get(key);
  }

  add(key: string | null, family: Family): void {
    if (key === null) return;
    const list = this.byKey.get(key);
    if (list) list.push(family);
    else this.byKey.set(key, [family]);
  }

  remove(key: string | null, family: Family): void {
    if (key === null) return;
    const list = this.byKey.get(key);
    if (!list) return;
    const at = list.indexOf(family);
    if (at >= 0) list.splice(at, 1);
    if (list.length === 0) this.byKey.delete(key);
  }
}

/** Renders a template as text. */
export function templateText(cluster: LogCluster): string {
  return cluster.tokens.join(' ');
}

/** A partly masked token (`blk_<*>`, `sshd[<*>]:`) is routed like a variable: its constant part may be a value. */
export function routingKey(token: string): string {
  return token.includes(WILDCARD) ? WILDCARD : token;
}

/**
 * Whether the tokens after the routing ones say enough to join a family of another leaf on them alone: at least
 * two constant tokens, and at least half of them constant (`<*> <*> <*>` would join anything of its length).
 */
export function siblingWorthy(tokens: readonly string[], prefixTokens: number): boolean {
  const rest = tokens.length - prefixTokens;
  if (rest <= 0) return false;
  let constant = 0;
  for (let i = prefixTokens; i < tokens.length; i++) if (!(tokens[i] as string).includes(WILDCARD)) constant++;
  return constant >= 2 && constant * 2 >= rest;
}

/**
 * Key of a family in the sibling index: length and the tokens after the routing ones, a variable with brackets
 * (`<*>)`) written `<*>` as in a family's template.
 */
export function siblingKey(tokens: readonly string[], prefixTokens: number): string {
  let key = String(tokens.length);
  for (let i = prefixTokens; i < tokens.length; i++) key += `\u0000${isVariable(tokens[i] as string) ? WILDCARD : tokens[i]}`;
  return key;
}

/** Constant tokens needed for a skeleton match: fewer say too little to join templates of different lengths. */
export const MIN_SKELETON_TOKENS = 3;

/**
 * The constant tokens of a template in order, or `null` when there are too few (see `skeleton`). A unit of time
 * after a variable is not one: `lifetime <*>` and `lifetime <*> sec` are one event.
 */
export function skeletonKey(tokens: readonly string[]): string | null {
  let key = '';
  let constant = 0;
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i] as string;
    if (token.includes(WILDCARD) || isUnitAfter(tokens[i - 1], token)) continue;
    key += `${token}\u0000`;
    constant++;
  }
  return constant >= MIN_SKELETON_TOKENS ? key : null;
}

/** Key of a message's (or a variant's) variant: its values at the tracked positions. */
export function variantKey(family: Family, tokens: readonly string[]): string {
  if (family.tracked.size === 0) return '';
  if (family.tracked.size > 8) return sortedKey(family, tokens);
  // The positions in increasing order, found without an array (and its sort) when there are few, as usual.
  let key = '';
  let last = -1;
  for (let n = 0; n < family.tracked.size; n++) {
    let next = Infinity;
    for (const i of family.tracked.keys()) if (i > last && i < next) next = i;
    key += `${n > 0 ? '\u0000' : ''}${next}=${tokens[next]}`;
    last = next;
  }
  return key;
}

/**
 * {@link variantKey} through a sorted array of the positions. Apart from it: the arrow function captures `tokens`,
 * which would make every call allocate a context.
 */
export function sortedKey(family: Family, tokens: readonly string[]): string {
  const positions = [...family.tracked.keys()].sort((a, b) => a - b);
  return positions.map((i) => `${i}=${tokens[i]}`).join('\u0000');
}

/** The template of a message's variant: the family's, with the message's values at tracked positions. */
export function variantTokens(family: Family, tokens: readonly string[]): string[] {
  return family.tokens.map((t, i) => (family.tracked.has(i) ? (tokens[i] as string) : t === WILDCARD ? (family.shapes.get(i) ?? t) : t));
}

/** The tracked position with the most values (made a variable when a family has too many variants). */
export function widestTracked(family: Family): number {
  let widest = -1;
  let most = -1;
  for (const [i, values] of family.tracked) {
    if (values.size > most) {
      widest = i;
      most = values.size;
    }
  }
  return widest;
}

/**
 * The fewest positions of a `length`-token family a message must repeat to join it: the smallest `equal` with
 * `equal / length >= similarity` (found by counting rather than by `ceil`, which floating point would skew).
 * Unlike Drain's `seqDist`, a wildcard position counts as repeated when the message has a masked variable there
 * too: otherwise a message made mostly of numbers ("onExtend:<*> <*> <*> <*>") can never reach the threshold and
 * every occurrence opens a new group. A wildcard facing a word still counts as a difference, which keeps
 * templates from swallowing unrelated messages of the same length.
 */
export function minimumEqual(length: number, similarity: number): number {
  if (length === 0) return 0;
  let equal = 0;
  while (equal < length && equal / length < similarity) equal++;
  return equal;
}

/** Whether every word tracked at a position starts with a lower-case letter (`cyrus`, `news`: names, see the module). */
export function lowerCase(values: ReadonlySet<string>): boolean {
  for (const value of values) {
    const code = value.charCodeAt(0);
    if (code < 97 || code > 122) return false;
  }
  return true;
}
