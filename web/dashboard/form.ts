import type { JsonSchemaProperty, Question } from './api.js';
import { h } from './dom.js';

/**
 * A form for one elicitation question, generated from its `requestedSchema` (the restricted schema of MCP
 * elicitation, the same in both generations: a flat object of string / number / integer / boolean properties,
 * string enums, and arrays of enum values). `collect` validates before anything is sent and answers the content,
 * or the messages to show.
 */
export interface QuestionForm {
  element: HTMLFieldSetElement;
  collect(): { content: Record<string, unknown> } | { errors: string[] };
}

interface Field {
  name: string;
  label: string;
  read(): { value?: unknown; error?: string };
}

function choicesOf(property: JsonSchemaProperty): Array<{ value: string; title: string }> | undefined {
  if (property.oneOf) return property.oneOf.map((choice) => ({ value: String(choice.const), title: choice.title ?? String(choice.const) }));
  if (property.enum) return property.enum.map((value, index) => ({ value: String(value), title: property.enumNames?.[index] ?? String(value) }));
  return undefined;
}

function fieldOf(prefix: string, name: string, property: JsonSchemaProperty, required: boolean): { field: Field; element: HTMLElement } {
  const id = `${prefix}-${name}`;
  const label = property.title ?? name;
  const hint = property.description ? h('span', { class: 'hint', id: `${id}-hint` }, property.description) : null;
  const described = hint ? `${id}-hint` : undefined;
  const choices = choicesOf(property);
  if (property.type === 'boolean') {
    const input = h('input', { type: 'checkbox', id, name, 'aria-describedby': described, checked: property.default === true });
    return {
      field: { name, label, read: () => ({ value: input.checked }) },
      element: h('div', { class: 'field check' }, input, h('label', { for: id }, label), hint),
    };
  }
  if (property.type === 'array') {
    const options =
      property.items?.anyOf?.map((choice) => ({ value: String(choice.const), title: choice.title ?? String(choice.const) })) ??
      (property.items?.enum ?? []).map((value) => ({ value: String(value), title: String(value) }));
    const boxes = options.map((option, index) => {
      const box = h('input', { type: 'checkbox', id: `${id}-${index}`, value: option.value });
      return { box, element: h('span', { class: 'check' }, box, h('label', { for: `${id}-${index}` }, option.title)) };
    });
    return {
      field: {
        name,
        label,
        read: () => {
          const values = boxes.filter(({ box }) => box.checked).map(({ box }) => box.value);
          return required && values.length === 0 ? { error: `${label}: choose at least one` } : { value: values };
        },
      },
      element: h('fieldset', { class: 'field' }, h('legend', {}, label, required ? ' (required)' : ''), ...boxes.map(({ element }) => element), hint),
    };
  }
  if (choices) {
    const select = h(
      'select',
      { id, name, 'aria-describedby': described, required },
      h('option', { value: '' }, '— choose —'),
      ...choices.map((choice) => h('option', { value: choice.value, selected: property.default === choice.value }, choice.title)),
    );
    return {
      field: { name, label, read: () => (select.value === '' ? (required ? { error: `${label} is required` } : {}) : { value: select.value }) },
      element: h('div', { class: 'field' }, h('label', { for: id }, label, required ? ' (required)' : ''), select, hint),
    };
  }
  const numeric = property.type === 'number' || property.type === 'integer';
  const input = h('input', {
    id,
    name,
    type: numeric ? 'number' : property.format === 'email' ? 'email' : property.format === 'uri' ? 'url' : property.format === 'date' ? 'date' : 'text',
    step: property.type === 'integer' ? '1' : numeric ? 'any' : undefined,
    min: property.minimum === undefined ? undefined : String(property.minimum),
    max: property.maximum === undefined ? undefined : String(property.maximum),
    value: property.default === undefined ? undefined : String(property.default),
    required,
    'aria-describedby': described,
  });
  return {
    field: {
      name,
      label,
      read: () => {
        const raw = input.value.trim();
        if (raw === '') return required ? { error: `${label} is required` } : {};
        if (!numeric) {
          if (property.minLength !== undefined && raw.length < property.minLength) return { error: `${label}: at least ${property.minLength} characters` };
          if (property.maxLength !== undefined && raw.length > property.maxLength) return { error: `${label}: at most ${property.maxLength} characters` };
          return { value: raw };
        }
        const value = Number(raw);
        if (!Number.isFinite(value) || (property.type === 'integer' && !Number.isInteger(value)))
          return { error: `${label} must be ${property.type === 'integer' ? 'a whole number' : 'a number'}` };
        if (property.minimum !== undefined && value < property.minimum) return { error: `${label} must be at least ${property.minimum}` };
        if (property.maximum !== undefined && value > property.maximum) return { error: `${label} must be at most ${property.maximum}` };
        return { value };
      },
    },
    element: h('div', { class: 'field' }, h('label', { for: id }, label, required ? ' (required)' : ''), input, hint),
  };
}

export function questionForm(question: Question, index: number): QuestionForm {
  const schema = question.requestedSchema ?? {};
  const required = new Set(schema.required ?? []);
  const built = Object.entries(schema.properties ?? {}).map(([name, property]) => fieldOf(`q${index}`, name, property, required.has(name)));
  const element = h('fieldset', { class: 'question' }, h('legend', {}, question.message || 'The task asks for input'), ...built.map(({ element }) => element));
  return {
    element,
    collect() {
      const content: Record<string, unknown> = {};
      const errors: string[] = [];
      for (const { field } of built) {
        const read = field.read();
        if (read.error) errors.push(read.error);
        else if (read.value !== undefined) content[field.name] = read.value;
      }
      return errors.length > 0 ? { errors } : { content };
    },
  };
}
