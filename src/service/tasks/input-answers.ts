import { AjvJsonSchemaValidator } from '@modelcontextprotocol/server/validators/ajv';
import { z } from 'zod';

import { MAX_ASKS_PER_QUESTION, MAX_INPUT_KEYS_PER_TASK, nextKey, ordinalOfKey } from '../../core/elicitation.js';
import type { InputRequestRecord, JsonObject } from '../../core/task.js';
import { sanitizeModelText } from '../../core/tool-outcome.js';

/** The change to apply to a task's input requests (the `answerInput` argument without `now`). */
export interface AnswerPlan {
  answers: Array<{ key: string; response: JsonObject }>;
  retire: Array<{ key: string; response: JsonObject | null }>;
  add: Array<{ key: string; request: JsonObject; replaces?: string }>;
  /** Why answers were rejected, for statusMessage; `undefined` when none was. */
  statusMessage?: string;
  /**
   * Set when a rejected answer cannot be asked again: the question was asked `MAX_ASKS_PER_QUESTION` times
   * (`input_invalid`), or a new key would exceed `MAX_INPUT_KEYS_PER_TASK` (`input_limit`). The task then fails
   * with this `data.reason` and `message` instead of applying the plan.
   */
  fail?: { reason: 'input_invalid' | 'input_limit'; message: string };
}

const ElicitResultSchema = z.looseObject({
  action: z.enum(['accept', 'decline', 'cancel']),
  content: z.record(z.string(), z.unknown()).optional(),
});

const validators = new AjvJsonSchemaValidator();
const compiled = new Map<string, ReturnType<typeof validators.getValidator>>();

/** A cached JSON Schema validator (the SDK's Ajv provider) for a `requestedSchema`. */
function validatorFor(schema: JsonObject): ReturnType<typeof validators.getValidator> {
  const cacheKey = JSON.stringify(schema);
  let validator = compiled.get(cacheKey);
  if (!validator) {
    if (compiled.size >= 256) compiled.clear();
    validator = validators.getValidator(schema as never);
    compiled.set(cacheKey, validator);
  }
  return validator;
}

/**
 * Check one answer against the question it answers: an `ElicitResult` (`accept` / `decline` / `cancel`), and for an
 * accepted form its `content` must satisfy `requestedSchema`. Returns the reason when it does not.
 */
export function checkAnswer(request: JsonObject, response: unknown): { ok: true; response: JsonObject } | { ok: false; reason: string } {
  const parsed = ElicitResultSchema.safeParse(response);
  if (!parsed.success) return { ok: false, reason: 'not an elicitation result ({action: "accept"|"decline"|"cancel", content?})' };
  const params = (request.params ?? {}) as JsonObject;
  if (parsed.data.action === 'accept' && params.mode !== 'url') {
    if (parsed.data.content === undefined) return { ok: false, reason: 'accepted without content' };
    const verdict = validatorFor((params.requestedSchema ?? { type: 'object' }) as JsonObject)(parsed.data.content);
    if (!verdict.valid) return { ok: false, reason: `content does not match the requested schema: ${verdict.errorMessage}` };
  }
  return { ok: true, response: response as JsonObject };
}

/**
 * Turn a `tasks/update` `inputResponses` map (or one v1 elicitation reply) into the store change (SEP-2663 E27):
 * answers to pending keys are kept; keys that are not pending are ignored; an answer that fails its check retires
 * the key and asks the same question again under a new key, saying why in statusMessage — at most
 * `MAX_ASKS_PER_QUESTION` asks per question and `MAX_INPUT_KEYS_PER_TASK` keys per task, else {@link AnswerPlan.fail}.
 */
export function planAnswers(requests: readonly InputRequestRecord[], responses: Readonly<Record<string, unknown>>): AnswerPlan {
  const plan: AnswerPlan = { answers: [], retire: [], add: [] };
  const reasons: string[] = [];
  for (const [key, response] of Object.entries(responses)) {
    const row = requests.find((candidate) => candidate.key === key && candidate.state === 'pending');
    if (!row) continue;
    const verdict = checkAnswer(row.request, response);
    if (verdict.ok) {
      plan.answers.push({ key, response: verdict.response });
      continue;
    }
    const ordinal = ordinalOfKey(key);
    const sameQuestion = requests.filter((candidate) => ordinalOfKey(candidate.key) === ordinal);
    if (sameQuestion.length >= MAX_ASKS_PER_QUESTION) {
      plan.fail = {
        reason: 'input_invalid',
        message: sanitizeModelText(
          `answer to ${key} rejected (${verdict.reason}); the question was asked ${sameQuestion.length} times, the most allowed (${MAX_ASKS_PER_QUESTION}), so the task fails`,
        ),
      };
      return plan;
    }
    if (requests.length + plan.add.length >= MAX_INPUT_KEYS_PER_TASK) {
      plan.fail = {
        reason: 'input_limit',
        message: sanitizeModelText(
          `answer to ${key} rejected (${verdict.reason}); asking again would exceed ${MAX_INPUT_KEYS_PER_TASK} input keys for this task, so the task fails`,
        ),
      };
      return plan;
    }
    const newKey = ordinal === undefined ? `${key}.retry` : nextKey(ordinal, sameQuestion);
    plan.retire.push({ key, response: typeof response === 'object' && response !== null && !Array.isArray(response) ? (response as JsonObject) : null });
    plan.add.push({ key: newKey, request: row.request, replaces: key });
    reasons.push(`answer to ${key} rejected (${verdict.reason}); asked again as ${newKey}`);
  }
  if (reasons.length > 0) plan.statusMessage = sanitizeModelText(reasons.join('; '));
  return plan;
}
