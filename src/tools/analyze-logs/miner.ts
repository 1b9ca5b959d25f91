/**
 * An online log template miner in the spirit of Drain (He et al., ICWS 2017), with the variants that loghub's
 * ground truth (and a reader) tells apart. A fixed-depth parse tree routes each masked message by its token count
 * and its leading tokens to a small set of candidate families; the most similar family absorbs the message when
 * the share of equal tokens reaches a threshold. Where the family and the message differ:
 * - in a word on both sides (`VM Started` / `VM Paused`, `en0` / `awdl0`), the position is *tracked*: each value
 *   makes its own variant of the family, until the position shows more than `maxWordValues` distinct values (more
 *   than `maxNameValues` when every value starts with a lower-case letter), when it becomes a variable and the
 *   variants that differed only there are merged. Lower-case words at one position are mostly names (users,
 *   services: `user cyrus`, `user news`, `user test`, `user root` are one template), capitalised ones states and
 *   event names (`Started`, `Paused`, `Resumed`, `Stopped` are four; `RoamFail:…`, `AuthFail:…`; `2xx`, `5xx`);
 * - in two values of one key (`tag="a",` / `tag="b",`), the key stays: `tag=<*>,` (word values are tracked first);
 * - otherwise (a masked variable facing a word, or two variables) the position becomes `<*>`, shown with the
 *   brackets its values leave open (`<*>)`), so that a template is as balanced as its messages.
 * A run of punctuation marks (`****`) never faces a variable in one family. How tokens compare is in
 * `token-rules.ts`.
 * A message that misses its leaf joins a family of another leaf with the same length whose template is the same
 * apart from the leading (routing) tokens: `com.apple.A: … told me to run this job` and `com.apple.B: …` are
 * one family, the first token tracked like any other.
 *
 * The variants are the templates reported. Everything is in memory and bounded: the number of families is capped
 * and the rarest are evicted when the cap is hit, each leaf holds at most `maxClustersPerLeaf` families (so a
 * message is compared with at most that many, however many distinct messages the input has) and each family at
 * most {@link MAX_VARIANTS} variants. Pure API, no I/O, so the benchmark runs exactly the code the tool runs.
 *
 * The families' shapes, their index by key and the pure key functions live in `template-family.ts`; what stays
 * here is the one structure — tree, families, variants, the two indexes — that every method changes consistently.
 */
import { isVariable, maskInto, WILDCARD, wildcardFor } from './masking.js';
import {
  type Family,
  FamilyIndex,
  type LogCluster,
  lowerCase,
  minimumEqual,
  routingKey,
  siblingKey,
  siblingWorthy,
  skeletonKey,
  type TreeNode,
  type Variant,
  variantKey,
  variantTokens,
  widestTracked,
} from './template-family.js';
import { distinctWords, hasLetter, isMark, sameKey, variableToken } from './token-rules.js';

export { type LogCluster, templateText } from './template-family.js';

/** Tuning of {@link TemplateMiner}. */
export interface MinerOptions {
  /** Leading tokens used for routing in the tree (Drain's `depth - 2`). Default 2. */
  prefixTokens?: number;
  /** Minimum share (0..1) of a family's tokens a message must repeat to join it. Default {@link DEFAULT_SIMILARITY}. */
  similarity?: number;
  /** Distinct words a position may show before it is a variable. Default {@link DEFAULT_WORD_VALUES}. */
  maxWordValues?: number;
  /**
   * Distinct words a position may show before it is a variable when every one starts with a lower-case letter (names:
   * users, services). Default {@link DEFAULT_NAME_VALUES}; never more than `maxWordValues`.
   */
  maxNameValues?: number;
  /** Children per tree node before new tokens are routed through the wildcard child. Default 100. */
  maxChildren?: number;
  /** Families kept at most; on overflow the rarest tenth is evicted. Default 10,000. */
  maxClusters?: number;
  /**
   * Families kept per leaf of the tree, which bounds the comparisons per message; a new family in a full leaf
   * replaces the leaf's rarest (the oldest of the rarest). Default 100, like Drain's children per node.
   */
  maxClustersPerLeaf?: number;
  /** Tokens of a message considered; the rest are ignored. Default 128. */
  maxTokens?: number;
  /** Characters kept of a template's example. Default 500. */
  maxExampleLength?: number;
  /** Called when a template is merged into another (`from` is gone; its messages now count in `into`). */
  onMerge?(from: LogCluster, into: LogCluster): void;
  /** Called when a template is evicted to stay within the caps. */
  onEvict?(cluster: LogCluster): void;
}

export const DEFAULT_SIMILARITY = 0.7;
export const DEFAULT_WORD_VALUES = 4;
export const DEFAULT_NAME_VALUES = 3;
/** Variants kept per family; beyond, the tracked position with the most values becomes a variable. */
export const MAX_VARIANTS = 32;

/** See `TemplateMiner.bestMatch`. */
interface BestMatch {
  match: Family | null;
  rarest: Family | null;
  aligned: boolean;
}

/** Online template miner; see the module comment. */
export class TemplateMiner {
  private readonly prefixTokens: number;
  private readonly similarity: number;
  private readonly maxWordValues: number;
  private readonly maxNameValues: number;
  private readonly maxChildren: number;
  private readonly maxClusters: number;
  private readonly maxClustersPerLeaf: number;
  private readonly maxTokens: number;
  private readonly maxExampleLength: number;
  private readonly onMerge: MinerOptions['onMerge'];
  private readonly onEvict: MinerOptions['onEvict'];
  private readonly root = new Map<number, TreeNode>();
  private readonly families = new Set<Family>();
  private readonly siblings = new FamilyIndex();
  private readonly skeletons = new FamilyIndex();
  private nextId = 1;
  private nextOrder = 1;
  private evictedCount = 0;
  private comparisonCount = 0;
  /** The masked tokens of the message being added, then copied into the array of their count in `byCount`. */
  private readonly scratch: string[] = [];
  /**
   * One array per token count, refilled for each message of that count (see `tokensOf`): the miner reads a
   * message's tokens while it adds it and keeps none of these arrays (a family or variant copies them).
   */
  private readonly byCount: string[][] = [];
  /** What {@link bestMatch} found for the message being added: one object, refilled (not one per message). */
  private readonly found: BestMatch = { match: null, rarest: null, aligned: false };

  constructor(options: MinerOptions = {}) {
    this.prefixTokens = options.prefixTokens ?? 2;
    this.similarity = options.similarity ?? DEFAULT_SIMILARITY;
    this.maxWordValues = options.maxWordValues ?? DEFAULT_WORD_VALUES;
    this.maxNameValues = Math.min(this.maxWordValues, options.maxNameValues ?? DEFAULT_NAME_VALUES);
    this.maxChildren = options.maxChildren ?? 100;
    this.maxClusters = options.maxClusters ?? 10_000;
    this.maxClustersPerLeaf = options.maxClustersPerLeaf ?? 100;
    this.maxTokens = options.maxTokens ?? 128;
    this.maxExampleLength = options.maxExampleLength ?? 500;
    this.onMerge = options.onMerge;
    this.onEvict = options.onEvict;
  }

  /**
   * Adds one message.
   *
   * @param message - the message part of a log line (its header is best removed by the caller).
   * @param example - what to keep as the template's example if one is created (a function is called only
   *   then); defaults to `message`.
   * @param weight - how many messages this stands for (a template replayed from a journaled part of a scan).
   * @returns the template that absorbed the message (new or existing).
   */
  add(message: string, example: string | (() => string) = message, weight = 1): LogCluster {
    const tokens = this.tokensOf(message);
    const leaf = this.leafFor(tokens);
    const { match, rarest, aligned } = this.bestMatch(leaf, tokens, this.found);
    if (match) return this.absorb(match, tokens, example, weight, aligned);
    const family = this.sibling(tokens);
    if (family) return this.absorb(family, tokens, example, weight);
    const longer = this.skeleton(tokens);
    if (longer) return this.count(longer, weight);
    if (rarest && leaf.length >= this.maxClustersPerLeaf) this.evict([rarest]);
    const variant = this.absorb(this.create(tokens, leaf), tokens, example, weight);
    if (this.families.size > this.maxClusters) this.evictRarest();
    return variant;
  }

  /**
   * A new family of the message `tokens` in `leaf`, registered. Apart from {@link add}: the arrow function here
   * captures `shapes`, which would make every call of `add` allocate a context for it.
   */
  private create(tokens: string[], leaf: Family[]): Family {
    const shapes = new Map<number, string>();
    const created: Family = {
      tokens: tokens.map((token, i) => {
        if (token === WILDCARD || !isVariable(token)) return token;
        shapes.set(i, token);
        return WILDCARD;
      }),
      tracked: new Map(),
      shapes,
      variants: new Map(),
      count: 0,
      order: this.nextOrder++,
      leaf,
      siblingKey: null,
      skeletonKey: null,
    };
    leaf.push(created);
    this.families.add(created);
    this.index(created);
    return created;
  }

  /**
   * The masked tokens of `message` (see `maskedTokens`) in an array of their exact count that is reused for the
   * next message of that count, instead of a new array per message: a message's array was ~185 bytes of the
   * ~1,200 a line allocated (17 slots for 8 tokens). Valid until the next call.
   */
  private tokensOf(message: string): string[] {
    const count = maskInto(message, this.maxTokens, this.scratch);
    let tokens = this.byCount[count];
    if (!tokens) {
      tokens = this.scratch.slice(0, count);
      this.byCount[count] = tokens;
      return tokens;
    }
    for (let i = 0; i < count; i++) tokens[i] = this.scratch[i] as string;
    return tokens;
  }

  /** The live templates, in creation order. */
  clusters(): LogCluster[] {
    const all: Variant[] = [];
    for (const family of this.families) all.push(...family.variants.values());
    return all.sort((a, b) => a.id - b.id);
  }

  /** Number of templates dropped so far because of the caps. */
  get evicted(): number {
    return this.evictedCount;
  }

  /**
   * Message-to-family comparisons made so far: the miner's work, counted rather than timed so that tests can
   * bound it on any machine.
   */
  get comparisons(): number {
    return this.comparisonCount;
  }

  private leafFor(tokens: string[]): Family[] {
    let byLength = this.root.get(tokens.length);
    if (!byLength) {
      byLength = { children: new Map(), families: null };
      this.root.set(tokens.length, byLength);
    }
    let node = byLength;
    const depth = Math.min(this.prefixTokens, tokens.length);
    for (let i = 0; i < depth; i++) {
      node = this.child(node, routingKey(tokens[i] as string));
    }
    node.families ??= [];
    return node.families;
  }

  private child(node: TreeNode, key: string): TreeNode {
    const existing = node.children.get(key);
    if (existing) return existing;
    // A full node sends unseen tokens down the wildcard branch so that a variable the masking missed cannot
    // fan the tree out without bound.
    const target = node.children.size >= this.maxChildren - 1 && key !== WILDCARD ? WILDCARD : key;
    let created = node.children.get(target);
    if (!created) {
      created = { children: new Map(), families: null };
      node.children.set(target, created);
    }
    return created;
  }

  /**
   * The most similar family of the leaf that reaches the threshold (ties: the one with more wildcards, then the
   * older), and the leaf's rarest family (ties: the older), found in the same pass so that a full leaf costs
   * nothing extra to make room in; `aligned` when the message has the match's token or one of its tracked values
   * at each of its constant positions, so that absorbing it changes none of them (see `absorb`).
   */
  private bestMatch(leaf: Family[], tokens: string[], found: BestMatch): BestMatch {
    const length = tokens.length;
    // Positions that may differ in a family that still reaches the threshold: a comparison stops past them, which
    // is what keeps a leaf of unrelated messages cheap (they differ early).
    const allowedDifferences = length - minimumEqual(length, this.similarity);
    let match: Family | null = null;
    let matchEqual = -1;
    let matchWildcards = -1;
    let matchAligned = false;
    let rarest: Family | null = null;
    for (const family of leaf) {
      this.comparisonCount++;
      if (!rarest || family.count < rarest.count) rarest = family;
      const template = family.tokens;
      let differences = 0;
      let wildcards = 0;
      // Constant positions where the message has another token (a difference or another value of the key).
      let unaligned = 0;
      for (let i = 0; i < length && differences <= allowedDifferences; i++) {
        const t = template[i] as string;
        // A wildcard facing a masked variable counts as equal; see `minimumEqual` for why.
        if (t === WILDCARD) {
          wildcards++;
          // A run of punctuation marks facing a variable rules the family out (see `isMark`).
          if (tokens[i] !== WILDCARD && !isVariable(tokens[i] as string)) differences += isMark(tokens[i] as string) ? length : 1;
        } else if (isMark(t) && isVariable(tokens[i] as string)) {
          differences += length;
        } else if (t !== tokens[i] && !family.tracked.get(i)?.has(tokens[i] as string)) {
          unaligned++;
          // Two values of one key (`name=a` / `name=b`) count as equal here: the key is the constant part.
          if (!sameKey(t, tokens[i] as string)) differences++;
        }
      }
      if (differences > allowedDifferences) continue;
      const equal = length - differences;
      if (equal > matchEqual || (equal === matchEqual && wildcards > matchWildcards)) {
        match = family;
        matchEqual = equal;
        matchWildcards = wildcards;
        matchAligned = unaligned === 0;
      }
    }
    found.match = match;
    found.rarest = rarest;
    found.aligned = matchAligned;
    return found;
  }

  /** A family of another leaf whose template is the message's apart from the routing tokens, or `null`. */
  private sibling(tokens: string[]): Family | null {
    if (!siblingWorthy(tokens, this.prefixTokens)) return null;
    const candidates = this.siblings.get(siblingKey(tokens, this.prefixTokens));
    if (!candidates) return null;
    for (const family of candidates) {
      this.comparisonCount++;
      let differs = false;
      let changedAt = 0;
      for (let i = 0; i < this.prefixTokens && !differs; i++) {
        const t = family.tokens[i] as string;
        differs = t !== tokens[i] && t !== WILDCARD && !(hasLetter(t) && hasLetter(tokens[i] as string));
        if (t !== tokens[i] && !(t === WILDCARD && isVariable(tokens[i] as string))) changedAt++;
      }
      if (!differs && changedAt <= 1) return family;
    }
    return null;
  }

  /**
   * A family of another length with the same constant tokens in the same order (`<*> bytes sent` and
   * `<*> bytes (<*> KB) sent`): a value that spans a varying number of tokens. Needs three constant tokens.
   */
  private skeleton(tokens: string[]): Family | null {
    const key = skeletonKey(tokens);
    if (key === null) return null;
    const candidates = this.skeletons.get(key);
    this.comparisonCount += candidates ? 1 : 0;
    return candidates?.[0] ?? null;
  }

  /** Counts a message in a family's most frequent variant (for a message that cannot be aligned with it). */
  private count(family: Family, weight: number): Variant {
    let most: Variant | null = null;
    for (const variant of family.variants.values()) if (!most || variant.count > most.count) most = variant;
    const variant = most as Variant;
    variant.count += weight;
    family.count += weight;
    return variant;
  }

  /** Registers a family under its keys (again after its template changed). */
  private index(family: Family): void {
    const sibling = siblingWorthy(family.tokens, this.prefixTokens) ? siblingKey(family.tokens, this.prefixTokens) : null;
    if (sibling !== family.siblingKey) {
      this.siblings.remove(family.siblingKey, family);
      this.siblings.add(sibling, family);
      family.siblingKey = sibling;
    }
    const skeleton = skeletonKey(family.tokens);
    if (skeleton !== family.skeletonKey) {
      this.skeletons.remove(family.skeletonKey, family);
      this.skeletons.add(skeleton, family);
      family.skeletonKey = skeleton;
    }
  }

  private unindex(family: Family): void {
    this.siblings.remove(family.siblingKey, family);
    this.skeletons.remove(family.skeletonKey, family);
    family.siblingKey = null;
    family.skeletonKey = null;
  }

  /**
   * Adds a message to a family: tracks or wildcards the positions that differ, then counts it in its variant.
   * `aligned`: the message is known to change no constant position of the family (see `bestMatch`), so only the
   * wildcards' shapes, if any, are read again.
   */
  private absorb(family: Family, tokens: string[], example: string | (() => string), weight: number, aligned = false): Variant {
    let changed = false;
    const positions = aligned && family.shapes.size === 0 ? 0 : family.tokens.length;
    for (let i = 0; i < positions; i++) {
      const t = family.tokens[i] as string;
      const token = tokens[i] as string;
      if (t === WILDCARD) {
        if (family.shapes.size > 0) this.checkShape(family, i, token);
        continue;
      }
      if (t === token) continue;
      const values = family.tracked.get(i);
      if (values) {
        if (values.has(token)) continue;
        values.add(token);
        if (values.size > (lowerCase(values) ? this.maxNameValues : this.maxWordValues)) {
          this.makeVariable(family, i);
          changed = true;
        }
      } else if (distinctWords(t, token) && this.maxWordValues >= 2) {
        family.tracked.set(i, new Set([t, token]));
        this.rekey(family);
      } else if (sameKey(t, token)) {
        // `tag="AudioMix",` after `tag=<*>,`: the key stays, so that the next value still compares equal.
        const shown = variableToken([t, token]);
        if (shown !== t) {
          this.setToken(family, i, shown);
          changed = true;
        }
      } else {
        this.makeVariable(family, i, token);
        changed = true;
      }
    }
    if (changed) this.index(family);
    const key = variantKey(family, tokens);
    let variant = family.variants.get(key);
    if (!variant) {
      if (family.variants.size >= MAX_VARIANTS) {
        this.makeVariable(family, widestTracked(family));
        this.index(family);
        return this.absorb(family, tokens, example, weight);
      }
      const text = typeof example === 'function' ? example() : example;
      variant = {
        id: this.nextId++,
        tokens: variantTokens(family, tokens),
        count: 0,
        example: text.length > this.maxExampleLength ? `${text.slice(0, this.maxExampleLength)}…` : text,
        family,
        key,
      };
      family.variants.set(key, variant);
    }
    variant.count += weight;
    family.count += weight;
    return variant;
  }

  /**
   * Position `i` becomes `<*>` in the family and its variants; variants that now coincide are merged. The
   * wildcard keeps the brackets that every value seen there (the template's, the tracked ones, `other`) leaves
   * unmatched, when they agree.
   */
  private makeVariable(family: Family, i: number, other?: string): void {
    const values = [...(family.tracked.get(i) ?? [family.tokens[i] as string])];
    if (other !== undefined) values.push(other);
    const wasTracked = family.tracked.delete(i);
    this.setToken(family, i, variableToken(values));
    if (wasTracked) this.rekey(family);
  }

  /**
   * Sets a position of the family and its variants: `<*>` (kept in `shapes` when it shows brackets) or a keyed
   * wildcard such as `tag=<*>,`.
   */
  private setToken(family: Family, i: number, shown: string): void {
    const wholly = isVariable(shown);
    if (wholly && shown !== WILDCARD) family.shapes.set(i, shown);
    else family.shapes.delete(i);
    family.tokens[i] = wholly ? WILDCARD : shown;
    for (const variant of family.variants.values()) variant.tokens[i] = shown;
  }

  /** Shows plain `<*>` at a shaped position once a message has other brackets there (see `shapes`). */
  private checkShape(family: Family, i: number, token: string): void {
    const shape = family.shapes.get(i);
    if (shape === undefined || token === shape || wildcardFor(token) === shape) return;
    family.shapes.delete(i);
    for (const variant of family.variants.values()) variant.tokens[i] = WILDCARD;
  }

  /** Recomputes the variants' keys after the tracked positions changed, merging variants whose keys coincide. */
  private rekey(family: Family): void {
    const old = [...family.variants.values()].sort((a, b) => a.id - b.id);
    family.variants.clear();
    for (const variant of old) {
      const key = variantKey(family, variant.tokens);
      const into = family.variants.get(key);
      if (!into) {
        variant.key = key;
        family.variants.set(key, variant);
        continue;
      }
      into.count += variant.count;
      this.onMerge?.(variant, into);
    }
  }

  /** Batch eviction for the global cap: the rarest tenth, the older first among equals. */
  private evictRarest(): void {
    const ordered = [...this.families].sort((a, b) => a.count - b.count || a.order - b.order);
    this.evict(ordered.slice(0, Math.max(1, Math.floor(this.maxClusters / 10))));
  }

  /** Drops families; each leaf holds at most `maxClustersPerLeaf`, so finding one in its leaf is cheap. */
  private evict(victims: Family[]): void {
    for (const victim of victims) {
      this.families.delete(victim);
      this.unindex(victim);
      const index = victim.leaf.indexOf(victim);
      if (index >= 0) victim.leaf.splice(index, 1);
      this.evictedCount += victim.variants.size;
      for (const variant of victim.variants.values()) this.onEvict?.(variant);
    }
  }
}
