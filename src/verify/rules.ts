/**
 * Public spec sections for the rule ids checks cite. The ids are those of the project's protocol reference
 * (`R*`/`D*` for 2025-11-25 tasks, `E*`/`X*` for the Tasks Extension, `B*` for the 2026-07-28 base protocol,
 * `C-*` for its conformance checklist); each maps to the published section it restates.
 */

const V1_TASKS = 'https://modelcontextprotocol.io/specification/2025-11-25/basic/utilities/tasks';
const V2_TASKS = 'https://github.com/modelcontextprotocol/ext-tasks/blob/main/specification/draft/tasks.md';
const BASE = 'https://modelcontextprotocol.io/specification/2026-07-28';

/** Sections of the 2025-11-25 tasks page, by the first rule number they start with. */
const V1_SECTIONS: ReadonlyArray<[number, string]> = [
  [1, '#capabilities'],
  [7, '#tool-level-negotiation'],
  [11, '#task-creation'],
  [16, '#task-status-lifecycle'],
  [17, '#ttl-and-resource-management'],
  [23, '#result-retrieval'],
  [27, '#input-required-status'],
  [31, '#associating-task-related-messages'],
  [34, '#task-notifications'],
  [36, '#task-progress-notifications'],
  [37, '#task-listing'],
  [40, '#task-cancellation'],
  [45, '#error-handling'],
  [48, '#security-considerations'],
  [54, '#behavior-requirements'],
];

/** Sections of the Tasks Extension spec, by the first rule number they start with. */
const V2_SECTIONS: ReadonlyArray<[number, string]> = [
  [1, '#capability-negotiation'],
  [8, '#result-types'],
  [11, '#task-lifecycle'],
  [14, '#creating-tasks'],
  [18, '#polling'],
  [21, '#providing-input'],
  [29, '#cancellation'],
  [33, '#notifications'],
  [38, '#streamable-http'],
  [39, '#error-handling'],
  [43, '#security-considerations'],
];

/** Pages of the 2026-07-28 base protocol, by the first rule number they start with. */
const BASE_PAGES: ReadonlyArray<[number, string]> = [
  [1, '/basic'],
  [8, '/server/discover'],
  [11, '/basic/versioning'],
  [13, '/basic/patterns/mrtr'],
  [18, '/basic/patterns/subscriptions'],
  [20, '/basic/patterns/cancellation'],
  [23, '/basic/transports/streamable-http'],
];

/** Checklist item → the rule it restates (so its link is that rule's section). */
const CHECKLIST_RULE: Readonly<Record<string, string>> = {
  'C-BASE-01': 'B3',
  'C-BASE-02': 'B9',
  'C-BASE-03': 'B26',
  'C-BASE-04': 'B25',
  'C-BASE-05': 'B26',
  'C-BASE-06': 'B8',
  'C-BASE-07': 'B8',
  'C-BASE-08': 'B11',
  'C-BASE-09': 'B23',
  'C-BASE-10': 'B25',
  'C-SEC-01': 'R50',
  'C-SEC-02': 'R49',
  'C-SEC-03': 'R49',
  'C-SEC-04': 'R49',
  'C-SEC-05': 'R45',
  'C-SEC-06': 'R51',
  'C-SEC-07': 'E45',
  'C-SEC-08': 'B15',
  'C-SEC-09': 'R52',
  'C-SEC-10': 'R48',
};

function section(sections: ReadonlyArray<[number, string]>, number: number): string {
  let found = sections[0]?.[1] ?? '';
  for (const [from, anchor] of sections) if (number >= from) found = anchor;
  return found;
}

/**
 * The public spec section a rule id refers to, e.g. `R45` → the 2025-11-25 tasks page `#error-handling`.
 * Checklist ids (`C-V1-23`, `C-V2-02`, `C-BASE-03`, `C-SEC-02`) resolve through the rule they restate.
 */
export function specLink(rule: string): string {
  const checklist = /^C-(V1|V2)-\d+$/.exec(rule);
  if (checklist) return checklist[1] === 'V1' ? V1_TASKS : V2_TASKS;
  const mapped = CHECKLIST_RULE[rule];
  if (mapped) return specLink(mapped);
  const match = /^([RDEXB])(\d+)$/.exec(rule);
  if (!match) return V1_TASKS;
  const number = Number(match[2]);
  switch (match[1]) {
    case 'R':
      return `${V1_TASKS}${section(V1_SECTIONS, number)}`;
    case 'D':
      return `${V1_TASKS}#error-handling`;
    case 'E':
      return `${V2_TASKS}${section(V2_SECTIONS, number)}`;
    case 'X':
      return V2_TASKS;
    default:
      return `${BASE}${section(BASE_PAGES, number)}`;
  }
}

/** The link of a check: the section of its most specific rule that is not a checklist id, else of the first. */
export function checkSpecLink(rules: readonly string[]): string {
  const rule = rules.find((id) => !id.startsWith('C-')) ?? rules[0];
  return rule ? specLink(rule) : V1_TASKS;
}
