// Types of bench/lib/loghub.mjs for the tests that import it.
export declare const REPOSITORY: string;
export declare const RELATIVE_LOCATION: string;
export declare const SYSTEMS: string[];
export declare const TRAIN: string[];
export declare const HELD_OUT: string[];
export declare function locateLoghub(explicit?: string, repository?: string): { dir: string | null; missing?: string; candidates: string[] };
export declare function missingDataHelp(missing: string): string;
export declare function parseCsvLine(line: string): string[];
export declare class LoghubDataError extends Error {}
export declare function readSystem(dir: string, system: string): { system: string; raw: string[]; content: string[]; eventIds: string[]; templates: string[] };
export declare function groupingAccuracy(predicted: readonly unknown[], truth: readonly string[]): number;
export declare function normalizeTemplate(template: string): string;
export declare function templateAccuracy(
  predicted: readonly unknown[],
  templateOf: (id: unknown) => string,
  truthIds: readonly string[],
  truthTemplates: readonly string[],
): { parsing: number; templates: number };
