import type { ElicitAnswer, InputRequest } from '../client/index.js';
import { checkContent, formFields } from './prompt-schema.js';
import { UsageError } from './usage-error.js';

/**
 * `--answers '<json>'`: answers given on the command line, for scripts.
 *
 * - An object of field values is shared by every question: each takes the fields its form has
 *   (`{"confirm": true}` answers every yes/no question named `confirm`).
 * - An entry under a question's key applies to that question only (`{"input-2": {"confirm": false}}`), and wins
 *   over shared values.
 * - An array gives one entry per question, in the order the questions are asked (`[{"confirm": true},
 *   {"action": "decline"}]`).
 *
 * An entry is field values (the question is accepted with them), or `{"action": "decline"}`,
 * `{"action": "cancel"}`, `{"action": "accept", "content": {…}}` when the form has no field named `action`.
 * Values are JSON typed as the form wants them (`true`, `3`, `"text"`, `["a","b"]`); a missing optional field
 * takes the form's default. A question the answers do not cover is prompted for on a terminal, else left open.
 */
export class ScriptedAnswers {
  private constructor(private readonly document: Record<string, unknown> | unknown[]) {}

  /**
   * Parse the flag's value.
   * @throws UsageError (exit 64) for invalid JSON or a value that is neither an object nor an array of objects.
   */
  static parse(json: string): ScriptedAnswers {
    let parsed: unknown;
    try {
      parsed = JSON.parse(json);
    } catch (error) {
      throw new UsageError(`--answers is not valid JSON: ${(error as Error).message}`);
    }
    const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
    if (Array.isArray(parsed) ? !parsed.every(isObject) : !isObject(parsed)) {
      throw new UsageError('--answers must be a JSON object of field values (e.g. \'{"confirm": true}\') or an array with one object per question');
    }
    return new ScriptedAnswers(parsed as Record<string, unknown> | unknown[]);
  }

  /**
   * The answer for a question, the reasons the given entry does not fit it, or `undefined` when nothing was
   * given for it.
   * @param index - 0-based position of the question among those this command was asked.
   */
  answerFor(request: InputRequest, index: number): { answer: ElicitAnswer } | { problems: string[] } | undefined {
    const fields = formFields(request.params.requestedSchema);
    const hasActionField = fields.some((field) => field.name === 'action');
    let entry: unknown;
    let shared = false;
    if (Array.isArray(this.document)) {
      entry = this.document[index];
    } else if (Object.hasOwn(this.document, request.key)) {
      entry = this.document[request.key];
    } else if (!hasActionField && typeof this.document.action === 'string') {
      entry = this.document; // one explicit answer ({action, content?}) for every question
    } else {
      shared = true;
      entry = Object.fromEntries(Object.entries(this.document).filter(([name]) => fields.some((field) => field.name === name)));
    }
    if (typeof entry !== 'object' || entry === null || Array.isArray(entry))
      return entry === undefined ? undefined : { problems: ['the entry is not an object'] };
    const object = entry as Record<string, unknown>;
    if (!hasActionField && typeof object.action === 'string') return this.explicit(object, fields);
    if (shared && Object.keys(object).length === 0) return undefined;
    const checked = checkContent(fields, object);
    return 'problems' in checked ? { problems: checked.problems } : { answer: { action: 'accept', content: checked.content } };
  }

  /**
   * Why `--answers` gave nothing for a question {@link answerFor} left uncovered (it answered `undefined`), for the
   * notice that leaves the question open: the names the object holds, none of them this question's key or one of
   * its fields (a misspelt field is the usual cause), or an array with no entry this far. `undefined` when there is
   * nothing to say (an empty object).
   * @param index - 0-based position of the question among those this command was asked.
   */
  missReason(request: InputRequest, index: number): string | undefined {
    if (Array.isArray(this.document)) {
      return `it has ${this.document.length} ${this.document.length === 1 ? 'entry' : 'entries'} and this is question ${index + 1}`;
    }
    const names = Object.keys(this.document);
    if (names.length === 0) return undefined;
    const fields = formFields(request.params.requestedSchema).map((field) => field.name);
    const given = names.map((name) => JSON.stringify(name)).join(', ');
    // The question's fields first: the line is cut at its end, and they are what the user needs to see.
    return `${fields.length === 0 ? 'its form has no fields' : `its fields are ${fields.join(', ')}`}; --answers names ${given}`;
  }

  private explicit(entry: Record<string, unknown>, fields: ReturnType<typeof formFields>): { answer: ElicitAnswer } | { problems: string[] } {
    if (entry.action === 'decline' || entry.action === 'cancel') return { answer: { action: entry.action } };
    if (entry.action !== 'accept') return { problems: [`action must be accept, decline or cancel (got ${JSON.stringify(entry.action)})`] };
    const content = entry.content ?? {};
    if (typeof content !== 'object' || content === null || Array.isArray(content)) return { problems: ['content must be an object of field values'] };
    const checked = checkContent(fields, content as Record<string, unknown>);
    return 'problems' in checked ? { problems: checked.problems } : { answer: { action: 'accept', content: checked.content } };
  }
}
