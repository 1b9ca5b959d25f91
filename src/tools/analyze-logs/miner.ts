/**
 * An online log template miner in the spirit of Drain (He et al., ICWS 2017): a fixed-depth parse tree routes
 * each masked message by its token count and its leading tokens to a small set of candidate groups; the most
 * similar group absorbs the message when the share of equal tokens reaches a threshold, and positions that
 * differ become `<*>`. Everything is in memory and bounded: the number of groups is capped and the rarest ones
 * are evicted when the cap is hit. So is the work per message: a leaf holds at most `maxClustersPerLeaf` groups,
 * so a message is compared with at most that many, however many distinct messages the input has (without this
 * cap, random words that the tree routes through its wildcard branches piled up in one leaf and every message
 * was compared with thousands of groups). Pure API, no I/O, so the benchmark runs exactly the code the tool runs.
 */
import { WILDCARD, maskedTokens } from './masking.js';

/** Tuning of {@link TemplateMiner}. */
export interface MinerOptions {
  /** Leading tokens used for routing in the tree (Drain's `depth - 2`). Default 2. */
  prefixTokens?: number;
  /** Minimum share (0..1) of a group's tokens a message must repeat to join it. Default 0.7. */
  similarity?: number;
  /** Children per tree node before new tokens are routed through the wildcard child. Default 100. */
  maxChildren?: number;
  /** Groups kept at most; on overflow the rarest tenth is evicted. Default 10,000. */
  maxClusters?: number;
  /**
   * Groups kept per leaf of the tree, which bounds the comparisons per message; a new group in a full leaf
   * replaces the leaf's rarest (the oldest of the rarest). Default 100, like Drain's children per node.
   */
  maxClustersPerLeaf?: number;
  /** Tokens of a message considered; the rest are ignored. Default 128. */
  maxTokens?: number;
  /** Characters kept of a group's example. Default 500. */
  maxExampleLength?: number;
}

/** A message template and the messages it has absorbed. */
export interface LogCluster {
  /** Unique for the miner's lifetime, in creation order; never reused after eviction. */
  readonly id: number;
  /** Masked tokens with `<*>` at variable positions. */
  readonly tokens: string[];
  /** Messages absorbed since creation. */
  count: number;
  /** The example given when the group was created, capped in length. */
  readonly example: string;
}

interface TreeNode {
  children: Map<string, TreeNode>;
  /** Only on leaves. */
  clusters: Cluster[] | null;
}

interface Cluster extends LogCluster {
  /** The leaf list that holds it, for eviction. */
  leaf: Cluster[];
}

/** Online template miner; see the module comment. */
export class TemplateMiner {
  private readonly prefixTokens: number;
  private readonly similarity: number;
  private readonly maxChildren: number;
  private readonly maxClusters: number;
  private readonly maxClustersPerLeaf: number;
  private readonly maxTokens: number;
  private readonly maxExampleLength: number;
  private readonly root = new Map<number, TreeNode>();
  private readonly live = new Set<Cluster>();
  private nextId = 1;
  private evictedCount = 0;
  private comparisonCount = 0;

  constructor(options: MinerOptions = {}) {
    this.prefixTokens = options.prefixTokens ?? 2;
    this.similarity = options.similarity ?? 0.7;
    this.maxChildren = options.maxChildren ?? 100;
    this.maxClusters = options.maxClusters ?? 10_000;
    this.maxClustersPerLeaf = options.maxClustersPerLeaf ?? 100;
    this.maxTokens = options.maxTokens ?? 128;
    this.maxExampleLength = options.maxExampleLength ?? 500;
  }

  /**
   * Adds one message.
   *
   * @param message - the message part of a log line (a timestamp prefix is best removed by the caller).
   * @param example - what to keep as the group's example if a group is created (a function is called only
   *   then); defaults to `message`.
   * @returns the group that absorbed the message (new or existing).
   */
  add(message: string, example: string | (() => string) = message): LogCluster {
    const tokens = maskedTokens(message, this.maxTokens);
    const leaf = this.leafFor(tokens);
    const { match, rarest } = this.bestMatch(leaf, tokens);
    if (match) {
      mergeInto(match.tokens, tokens);
      match.count++;
      return match;
    }
    if (rarest && leaf.length >= this.maxClustersPerLeaf) this.evict([rarest]);
    const text = typeof example === 'function' ? example() : example;
    const cluster: Cluster = {
      id: this.nextId++,
      tokens,
      count: 1,
      example: text.length > this.maxExampleLength ? `${text.slice(0, this.maxExampleLength)}…` : text,
      leaf,
    };
    leaf.push(cluster);
    this.live.add(cluster);
    if (this.live.size > this.maxClusters) this.evictRarest();
    return cluster;
  }

  /** The live groups, in creation order. */
  clusters(): LogCluster[] {
    return [...this.live];
  }

  /** Number of groups dropped so far because of the caps. */
  get evicted(): number {
    return this.evictedCount;
  }

  /**
   * Message-to-group comparisons made so far: the miner's work, counted rather than timed so that tests can
   * bound it on any machine.
   */
  get comparisons(): number {
    return this.comparisonCount;
  }

  private leafFor(tokens: string[]): Cluster[] {
    let byLength = this.root.get(tokens.length);
    if (!byLength) {
      byLength = { children: new Map(), clusters: null };
      this.root.set(tokens.length, byLength);
    }
    let node = byLength;
    const depth = Math.min(this.prefixTokens, tokens.length);
    for (let i = 0; i < depth; i++) {
      node = this.child(node, routingKey(tokens[i] as string));
    }
    node.clusters ??= [];
    return node.clusters;
  }

  private child(node: TreeNode, key: string): TreeNode {
    const existing = node.children.get(key);
    if (existing) return existing;
    // A full node sends unseen tokens down the wildcard branch so that a variable the masking missed cannot
    // fan the tree out without bound.
    const target = node.children.size >= this.maxChildren - 1 && key !== WILDCARD ? WILDCARD : key;
    let created = node.children.get(target);
    if (!created) {
      created = { children: new Map(), clusters: null };
      node.children.set(target, created);
    }
    return created;
  }

  /**
   * The most similar group of the leaf that reaches the threshold (ties: the one with more wildcards, then the
   * older), and the leaf's rarest group (ties: the older), found in the same pass so that a full leaf costs
   * nothing extra to make room in.
   */
  private bestMatch(leaf: Cluster[], tokens: string[]): { match: Cluster | null; rarest: Cluster | null } {
    const length = tokens.length;
    // Positions that may differ in a group that still reaches the threshold: a comparison stops past them, which
    // is what keeps a leaf of unrelated messages cheap (they differ early).
    const allowedDifferences = length - minimumEqual(length, this.similarity);
    let match: Cluster | null = null;
    let matchEqual = -1;
    let matchWildcards = -1;
    let rarest: Cluster | null = null;
    for (const cluster of leaf) {
      this.comparisonCount++;
      if (!rarest || cluster.count < rarest.count) rarest = cluster;
      const template = cluster.tokens;
      let differences = 0;
      let wildcards = 0;
      for (let i = 0; i < length && differences <= allowedDifferences; i++) {
        const t = template[i];
        // A wildcard facing a masked variable counts as equal; see `minimumEqual` for why.
        if (t === WILDCARD) {
          wildcards++;
          if (tokens[i] !== WILDCARD) differences++;
        } else if (t !== tokens[i]) differences++;
      }
      if (differences > allowedDifferences) continue;
      const equal = length - differences;
      if (equal > matchEqual || (equal === matchEqual && wildcards > matchWildcards)) {
        match = cluster;
        matchEqual = equal;
        matchWildcards = wildcards;
      }
    }
    return { match, rarest };
  }

  /** Batch eviction for the global cap: the rarest tenth, the older first among equals. */
  private evictRarest(): void {
    const ordered = [...this.live].sort((a, b) => a.count - b.count || a.id - b.id);
    this.evict(ordered.slice(0, Math.max(1, Math.floor(this.maxClusters / 10))));
  }

  /** Drops groups; each leaf holds at most `maxClustersPerLeaf`, so finding one in its leaf is cheap. */
  private evict(victims: Cluster[]): void {
    for (const victim of victims) {
      this.live.delete(victim);
      const index = victim.leaf.indexOf(victim);
      if (index >= 0) victim.leaf.splice(index, 1);
    }
    this.evictedCount += victims.length;
  }
}

/** Renders a group's template as text. */
export function templateText(cluster: LogCluster): string {
  return cluster.tokens.join(' ');
}

/** A partly masked token (`blk_<*>`, `sshd[<*>]:`) is routed like a variable: its constant part may be a value. */
function routingKey(token: string): string {
  return token.includes(WILDCARD) ? WILDCARD : token;
}

/**
 * The fewest positions of a `length`-token group a message must repeat to join it: the smallest `equal` with
 * `equal / length >= similarity` (found by counting rather than by `ceil`, which floating point would skew).
 * Unlike Drain's `seqDist`, a wildcard position counts as repeated when the message has a masked variable there
 * too: otherwise a message made mostly of numbers ("onExtend:<*> <*> <*> <*>") can never reach the threshold and
 * every occurrence opens a new group. A wildcard facing a word still counts as a difference, which keeps
 * templates from swallowing unrelated messages of the same length.
 */
function minimumEqual(length: number, similarity: number): number {
  if (length === 0) return 0;
  let equal = 0;
  while (equal < length && equal / length < similarity) equal++;
  return equal;
}

function mergeInto(template: string[], tokens: string[]): void {
  for (let i = 0; i < template.length; i++) {
    if (template[i] !== tokens[i]) template[i] = WILDCARD;
  }
}
