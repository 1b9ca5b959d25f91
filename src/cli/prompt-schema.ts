/**
 * The form of an elicitation: the fields of its `requestedSchema` (MCP form elicitation allows a flat object of
 * primitive fields — string, number, integer, boolean, single-select enums in their three spellings, and
 * multi-select arrays), how to read a typed line into a value, and how to check a value given as JSON.
 */
import { remoteLine } from '../client/remote-text.js';

/** A value a form field takes. */
export type FieldValue = string | number | boolean | string[];

/** One field of a form. */
export interface FormField {
  name: string;
  /** `title` of the property, else its name. */
  label: string;
  description?: string;
  kind: 'string' | 'number' | 'integer' | 'boolean' | 'choice' | 'choices';
  required: boolean;
  default?: FieldValue;
  /** `choice` / `choices`: the allowed values with their display titles. */
  options?: Array<{ value: string; title: string }>;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  /** A regular expression (JSON Schema `pattern`, unanchored). */
  pattern?: string;
  /** `email`, `uri`, `date` or `date-time`. */
  format?: string;
  minItems?: number;
  maxItems?: number;
}

type Schema = Record<string, unknown>;

const asObject = (value: unknown): Schema | undefined => (typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Schema) : undefined);
const asNumber = (value: unknown): number | undefined => (typeof value === 'number' && Number.isFinite(value) ? value : undefined);
const asString = (value: unknown): string | undefined => (typeof value === 'string' ? value : undefined);

/** Options of an enum: `oneOf`/`anyOf` of `{const, title}`, or `enum` with optional legacy `enumNames`. */
function optionsOf(schema: Schema): FormField['options'] {
  const titled = (Array.isArray(schema.oneOf) ? schema.oneOf : Array.isArray(schema.anyOf) ? schema.anyOf : undefined)?.map(asObject);
  if (titled?.every((option) => typeof option?.const === 'string')) {
    return titled.map((option) => ({ value: option?.const as string, title: asString(option?.title) ?? (option?.const as string) }));
  }
  if (Array.isArray(schema.enum) && schema.enum.every((value) => typeof value === 'string')) {
    const names = Array.isArray(schema.enumNames) ? schema.enumNames : [];
    return (schema.enum as string[]).map((value, index) => ({ value, title: asString(names[index]) ?? value }));
  }
  return undefined;
}

/** The fields of a `requestedSchema`, in property order. A property of an unknown shape is read as text. */
export function formFields(requestedSchema: unknown): FormField[] {
  const schema = asObject(requestedSchema) ?? {};
  const properties = asObject(schema.properties) ?? {};
  const required = new Set(Array.isArray(schema.required) ? schema.required.filter((name): name is string => typeof name === 'string') : []);
  return Object.entries(properties).map(([name, raw]) => {
    const property = asObject(raw) ?? {};
    const field: FormField = { name, label: asString(property.title) ?? name, kind: 'string', required: required.has(name) };
    const description = asString(property.description);
    if (description) field.description = description;
    const items = asObject(property.items);
    const options = property.type === 'array' && items ? optionsOf(items) : optionsOf(property);
    if (property.type === 'array' && options) field.kind = 'choices';
    else if (options) field.kind = 'choice';
    else if (property.type === 'boolean' || property.type === 'number' || property.type === 'integer') field.kind = property.type;
    if (options) field.options = options;
    for (const key of ['minimum', 'maximum', 'minLength', 'maxLength', 'minItems', 'maxItems'] as const) {
      const value = asNumber(property[key]);
      if (value !== undefined) field[key] = value;
    }
    const pattern = asString(property.pattern);
    if (pattern !== undefined) field.pattern = pattern;
    const format = asString(property.format);
    if (format !== undefined) field.format = format;
    if (property.default !== undefined && checkFieldValue(field, property.default) === undefined) field.default = property.default as FieldValue;
    return field;
  });
}

const TRUE = new Set(['y', 'yes', 'true', '1', 'on']);
const FALSE = new Set(['n', 'no', 'false', '0', 'off']);
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/i;

/** One option of a choice from what was typed: its number in the list, its value, or its title (any case). */
function pickOption(field: FormField, text: string): string | undefined {
  const options = field.options ?? [];
  const index = /^\d+$/.test(text) ? Number(text) - 1 : -1;
  if (index >= 0 && index < options.length) return options[index]?.value;
  const lower = text.toLowerCase();
  return (
    options.find((option) => option.value === text)?.value ??
    options.find((option) => option.value.toLowerCase() === lower || option.title.toLowerCase() === lower)?.value
  );
}

/**
 * Read a typed line (already trimmed, not empty) as the field's value.
 * @returns the value, or the reason it is not acceptable.
 */
export function parseFieldInput(field: FormField, text: string): { value: FieldValue } | { reason: string } {
  let value: FieldValue;
  switch (field.kind) {
    case 'boolean': {
      const lower = text.toLowerCase();
      if (!TRUE.has(lower) && !FALSE.has(lower)) return { reason: 'answer yes or no' };
      value = TRUE.has(lower);
      break;
    }
    case 'number':
    case 'integer':
      value = Number(text);
      if (!Number.isFinite(value) || !/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text))
        return { reason: `enter ${field.kind === 'integer' ? 'a whole number' : 'a number'}` };
      break;
    case 'choice': {
      const picked = pickOption(field, text);
      if (picked === undefined) return { reason: 'pick one of the listed options (number or name)' };
      value = picked;
      break;
    }
    case 'choices': {
      const parts = text
        .split(',')
        .map((part) => part.trim())
        .filter((part) => part.length > 0);
      const picked = parts.map((part) => pickOption(field, part));
      const unknown = parts.filter((_, index) => picked[index] === undefined);
      if (unknown.length > 0) return { reason: `not an option: ${unknown.join(', ')}` };
      value = [...new Set(picked as string[])];
      break;
    }
    default:
      value = text;
  }
  const reason = checkFieldValue(field, value);
  return reason === undefined ? { value } : { reason };
}

/** Why `value` (a JSON value) does not fit the field, or `undefined` when it does. */
export function checkFieldValue(field: FormField, value: unknown): string | undefined {
  switch (field.kind) {
    case 'boolean':
      return typeof value === 'boolean' ? undefined : 'must be true or false';
    case 'number':
    case 'integer':
      if (typeof value !== 'number' || !Number.isFinite(value)) return 'must be a number';
      if (field.kind === 'integer' && !Number.isInteger(value)) return 'must be a whole number';
      if (field.minimum !== undefined && value < field.minimum) return `must be at least ${field.minimum}`;
      if (field.maximum !== undefined && value > field.maximum) return `must be at most ${field.maximum}`;
      return undefined;
    case 'choice':
      return typeof value === 'string' && field.options?.some((option) => option.value === value)
        ? undefined
        : `must be one of ${field.options?.map((option) => option.value).join(', ')}`;
    case 'choices': {
      if (!Array.isArray(value) || !value.every((item) => typeof item === 'string' && field.options?.some((option) => option.value === item))) {
        return `must be a list of ${field.options?.map((option) => option.value).join(', ')}`;
      }
      if (field.minItems !== undefined && value.length < field.minItems) return `pick at least ${field.minItems}`;
      if (field.maxItems !== undefined && value.length > field.maxItems) return `pick at most ${field.maxItems}`;
      return undefined;
    }
    default:
      return checkString(field, value);
  }
}

function checkString(field: FormField, value: unknown): string | undefined {
  if (typeof value !== 'string') return 'must be text';
  const length = [...value].length;
  if (field.minLength !== undefined && length < field.minLength) return `must be at least ${field.minLength} characters`;
  if (field.maxLength !== undefined && length > field.maxLength) return `must be at most ${field.maxLength} characters`;
  if (field.pattern !== undefined) {
    let matches = true;
    try {
      matches = new RegExp(field.pattern, 'u').test(value);
    } catch {
      // A pattern this engine cannot compile is left to the server to check.
    }
    if (!matches) return `must match ${field.pattern}`;
  }
  if (field.format === 'email' && !EMAIL.test(value)) return 'must be an email address';
  if (field.format === 'uri' && !URL.canParse(value)) return 'must be a URI (scheme:…)';
  if (field.format === 'date' && !(DATE.test(value) && !Number.isNaN(Date.parse(value)))) return 'must be a date (YYYY-MM-DD)';
  if (field.format === 'date-time' && !(DATE_TIME.test(value) && !Number.isNaN(Date.parse(value)))) return 'must be a date-time (YYYY-MM-DDTHH:MM:SSZ)';
  return undefined;
}

/**
 * Check a whole form's content (from `--answers`): every required field present, every value fitting; fields the
 * form does not have are reported too. Missing optional fields with a default take it.
 * @returns the content to send, or the problems.
 */
export function checkContent(fields: readonly FormField[], content: Record<string, unknown>): { content: Record<string, FieldValue> } | { problems: string[] } {
  const problems: string[] = [];
  const result: Record<string, FieldValue> = {};
  for (const field of fields) {
    const value = content[field.name];
    if (value === undefined) {
      if (field.default !== undefined) result[field.name] = field.default;
      else if (field.required) problems.push(`${field.name} is required`);
      continue;
    }
    const reason = checkFieldValue(field, value);
    if (reason) problems.push(`${field.name} ${reason}`);
    else result[field.name] = value as FieldValue;
  }
  for (const name of Object.keys(content)) if (!fields.some((field) => field.name === name)) problems.push(`${name} is not a field of this form`);
  return problems.length > 0 ? { problems } : { content: result };
}

/** What a field takes, for prompts and hints: `yes/no`, `integer 1–10`, `one of: a, b`, `text, at most 20 characters`. */
export function describeField(field: FormField): string {
  const parts: string[] = [];
  switch (field.kind) {
    case 'boolean':
      parts.push('yes/no');
      break;
    case 'number':
    case 'integer':
      parts.push(field.minimum !== undefined && field.maximum !== undefined ? `${field.kind} ${field.minimum}–${field.maximum}` : field.kind);
      if (field.minimum !== undefined && field.maximum === undefined) parts.push(`≥ ${field.minimum}`);
      if (field.maximum !== undefined && field.minimum === undefined) parts.push(`≤ ${field.maximum}`);
      break;
    case 'choice':
      parts.push(`one of: ${field.options?.map((option) => option.value).join(', ')}`);
      break;
    case 'choices':
      parts.push(`any of: ${field.options?.map((option) => option.value).join(', ')}`);
      if (field.minItems !== undefined) parts.push(`at least ${field.minItems}`);
      if (field.maxItems !== undefined) parts.push(`at most ${field.maxItems}`);
      break;
    default:
      parts.push(field.format ?? 'text');
      if (field.minLength !== undefined) parts.push(`at least ${field.minLength} characters`);
      if (field.maxLength !== undefined) parts.push(`at most ${field.maxLength} characters`);
      if (field.pattern !== undefined) parts.push(`matching ${field.pattern}`);
  }
  parts.push(field.required ? 'required' : 'optional');
  if (field.default !== undefined) parts.push(`default ${JSON.stringify(field.default)}`);
  // Option values, the pattern and the default are the server's words.
  return remoteLine(parts.join(', '));
}

/** A value for a field in a hint: `true` for yes/no (confirming is what a hint is for), else the default, the first option(s), the minimum or 0, or "…". */
function exampleValue(field: FormField): FieldValue {
  if (field.kind === 'boolean') return true;
  if (field.default !== undefined) return field.default;
  switch (field.kind) {
    case 'number':
    case 'integer':
      return field.minimum ?? 0;
    case 'choice':
      return field.options?.[0]?.value ?? '';
    case 'choices':
      return (field.options ?? []).slice(0, Math.max(1, field.minItems ?? 1)).map((option) => option.value);
    default:
      return '…';
  }
}

/** A plausible `--answers` object for a form (its required fields and those with a default), for hints. */
export function exampleContent(fields: readonly FormField[]): Record<string, FieldValue> {
  return Object.fromEntries(fields.filter((field) => field.required || field.default !== undefined).map((field) => [field.name, exampleValue(field)]));
}
