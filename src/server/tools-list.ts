import { z } from 'zod';

import type { JsonObject } from '../core/task.js';
import type { ToolDescriptor, ToolExecution } from '../core/tool.js';
import type { Caller } from '../service/caller.js';

/** 2025-11-25 `execution.taskSupport` for each execution mode (R8–R10). */
const TASK_SUPPORT: Record<ToolExecution, 'forbidden' | 'optional' | 'required'> = {
  sync: 'forbidden',
  'task-optional': 'optional',
  'task-required': 'required',
};

const schemaCache = new WeakMap<object, JsonObject>();

/** JSON Schema of a zod schema as MCP advertises it (an object schema, without `$schema`). */
export function advertisedSchema(schema: z.ZodType, io: 'input' | 'output'): JsonObject {
  const cached = schemaCache.get(schema);
  if (cached && io === 'input') return cached;
  const { $schema: _ignored, ...json } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as JsonObject;
  if (io === 'input') schemaCache.set(schema, json);
  return json;
}

/**
 * The `tools/list` entry of a tool for this caller: `execution.taskSupport` only in 2025-11-25 sessions (R8; the
 * field does not exist before 2025-11-25 nor in 2026-07-28, where the server alone decides, SEP-2663 E2).
 */
export function toolListEntry(tool: ToolDescriptor, caller: Caller): JsonObject {
  const entry: JsonObject = {
    name: tool.name,
    description: tool.description,
    inputSchema: tool.advertisedSchemas?.input ?? advertisedSchema(tool.inputSchema, 'input'),
  };
  if (tool.title) entry.title = tool.title;
  // A tool whose schemas are JSON Schema already (an upstream's) shows them unchanged (see `advertisedSchemas`).
  const output = tool.advertisedSchemas ? tool.advertisedSchemas.output : tool.outputSchema && advertisedSchema(tool.outputSchema, 'output');
  if (output) entry.outputSchema = output;
  if (caller.generation === 'v1') entry.execution = { taskSupport: TASK_SUPPORT[tool.execution] };
  return entry;
}
