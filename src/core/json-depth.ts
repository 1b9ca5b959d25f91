/**
 * How deep a JSON-like value nests, measured without recursion (a value nested thousands deep must not overflow the
 * stack that measures it) and only as far as a cap. Used for what a client sends (tool arguments: parsed JSON, a
 * tree) and for what a tool hands back (any value a tool built). The walk is depth first and takes each object's
 * children one at a time, so a cycle, however wide, is met at the cap after `cap` steps; a value reached by many
 * paths (a diamond-shaped graph, 2^n paths through n levels) is walked once per path, so the walk also stops after
 * `budget` objects and answers as if too deep — JSON.stringify, which comes next, would never finish such a value.
 * No marks are kept: on a tree of a million small objects the walk costs a third of serialising it.
 */

/** Objects and arrays {@link depthUpTo} visits at most (counted once per path to them): 2^25. */
export const DEPTH_WALK_BUDGET = 2 ** 25;

/**
 * How many levels of arrays and objects `value` nests (a scalar is 0, `{}` is 1), up to `cap + 1`: a value deeper
 * than `cap`, a cycle, or a walk past `budget` objects answers `cap + 1` as soon as the walk sees it.
 */
export function depthUpTo(value: unknown, cap: number, budget = DEPTH_WALK_BUDGET): number {
  if (value === null || typeof value !== 'object') return 0;
  // The path from `value` down: each level's children and the next one to look at.
  const children: unknown[][] = [childrenOf(value)];
  const next: number[] = [0];
  let deepest = 1;
  let visits = 1;
  while (children.length > 0) {
    const top = children.length - 1;
    const kids = children[top]!;
    const index = next[top]!;
    if (index >= kids.length) {
      children.pop();
      next.pop();
      continue;
    }
    next[top] = index + 1;
    const child = kids[index];
    if (child === null || typeof child !== 'object') continue;
    if (children.length >= cap || ++visits > budget) return cap + 1;
    children.push(childrenOf(child));
    next.push(0);
    if (children.length > deepest) deepest = children.length;
  }
  return deepest;
}

function childrenOf(node: object): unknown[] {
  return Array.isArray(node) ? node : Object.values(node);
}
