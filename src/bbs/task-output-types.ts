import { Type } from '@sinclair/typebox';
import { InvalidArgumentError } from '../core/index.js';

/**
 * A file or directory a task leaves behind (seed 001's outputs): after the task's process ended,
 * its cell archives `path` (as the container saw it) under `name`, and the server keeps the
 * archive until the task is deleted (`GET /v1/tasks/{guid}/outputs`, `berth task outputs`).
 */
export interface TaskOutputDeclaration {
  /** The top-level name in the archive: a file, or a directory holding the output's tree. */
  readonly name: string;
  /** Absolute, in the container; symlinks on the way resolve inside the container's root. */
  readonly path: string;
}

const mib = 1024 * 1024;

/** The bounds of outputs (docs/limits.md). */
export const taskOutputLimits = {
  /** Outputs one task may declare. */
  maxOutputs: 16,
  /** A declared path's length (Linux's PATH_MAX is 4096; nobody names outputs that deep). */
  maxPathLength: 1024,
  maxNameLength: 64,
  /** Bytes of file content collected per task when the task says nothing (`outputs_max_bytes`). */
  defaultBytes: 64 * mib,
  /**
   * The most a task may ask for: the server keeps archives in its database (1 MiB rows) and the
   * cell writes one to its disk before uploading it.
   */
  maxBytes: 256 * mib,
  /** Files and directories in one task's outputs: each is a tar header and a lookup on the cell. */
  maxEntries: 10_000,
} as const;

/** An archive name: no slash, no dot-only name, nothing a shell or a tar reader would misread. */
export const outputNamePattern = '^[A-Za-z0-9][A-Za-z0-9_.-]*$';
/**
 * Absolute, no NUL, and no `..` component anywhere (the container's root is the only root).
 * Written without lookahead, which the API fuzzer (fast-check's stringMatching) cannot generate.
 */
export const outputPathPattern =
  '^(?:/(?:[^/\\u0000.][^/\\u0000]*|\\.(?:[^/\\u0000.][^/\\u0000]*)?|\\.\\.[^/\\u0000]+)?)+$';

export const TaskOutputsSchema = Type.Array(
  Type.Object(
    {
      name: Type.String({
        minLength: 1,
        maxLength: taskOutputLimits.maxNameLength,
        pattern: outputNamePattern,
        description: 'Its name in the archive',
      }),
      path: Type.String({
        minLength: 2,
        maxLength: taskOutputLimits.maxPathLength,
        pattern: outputPathPattern,
        description: 'Absolute path in the container (a file or a directory); no `..`',
      }),
    },
    { additionalProperties: false },
  ),
  {
    maxItems: taskOutputLimits.maxOutputs,
    description: 'Files or directories collected from the container when the task ends',
  },
);

export const OutputsMaxBytesSchema = Type.Integer({
  minimum: 1,
  maximum: taskOutputLimits.maxBytes,
  description: `Bytes of output a task may leave (default ${taskOutputLimits.defaultBytes}); more fails the task`,
});

/**
 * The checks the schema cannot make, for every way a task is desired (public route, internal
 * route, in-process callers): names unique, paths and the byte limit within bounds.
 */
export function validateTaskOutputs(
  outputs: readonly TaskOutputDeclaration[] | undefined,
  maxBytes: number | undefined,
): void {
  const list = outputs ?? [];
  if (list.length > taskOutputLimits.maxOutputs) {
    throw new InvalidArgumentError(
      `A task declares at most ${taskOutputLimits.maxOutputs} outputs, got ${list.length}`,
      { field: 'outputs', limit: taskOutputLimits.maxOutputs },
    );
  }
  const seen = new Set<string>();
  for (const output of list) {
    if (
      !new RegExp(outputNamePattern).test(output.name) ||
      output.name.length > taskOutputLimits.maxNameLength
    ) {
      throw new InvalidArgumentError(`Invalid output name "${output.name}": expected ${outputNamePattern}`, {
        field: 'outputs',
      });
    }
    if (
      !new RegExp(outputPathPattern).test(output.path) ||
      output.path.length > taskOutputLimits.maxPathLength
    ) {
      throw new InvalidArgumentError(
        `Invalid path "${output.path}" of output "${output.name}": expected an absolute path without ".."`,
        { field: 'outputs' },
      );
    }
    if (output.path.split('/').every((part) => part === '' || part === '.')) {
      throw new InvalidArgumentError(
        `Invalid path "${output.path}" of output "${output.name}": the container's whole root is no output`,
        { field: 'outputs' },
      );
    }
    if (seen.has(output.name)) {
      throw new InvalidArgumentError(`Output name "${output.name}" is declared twice`, { field: 'outputs' });
    }
    seen.add(output.name);
  }
  if (
    maxBytes !== undefined &&
    (!Number.isInteger(maxBytes) || maxBytes < 1 || maxBytes > taskOutputLimits.maxBytes)
  ) {
    throw new InvalidArgumentError(
      `outputs_max_bytes must be an integer from 1 to ${taskOutputLimits.maxBytes}, got ${maxBytes}`,
      { field: 'outputs_max_bytes', limit: taskOutputLimits.maxBytes },
    );
  }
}

/**
 * The largest archive a cell may upload for a task allowed `maxBytes` of content: tar's headers
 * (512 bytes per entry, more for long names) and gzip's worst case (stored blocks) come on top.
 */
export function maxArchiveBytes(maxBytes: number): number {
  return maxBytes + Math.ceil(maxBytes / 100) + taskOutputLimits.maxEntries * 1536 + mib;
}

/** What the server keeps about a task's archive (`GET /v1/tasks/{guid}/outputs` serves the bytes). */
export interface TaskOutputsInfo {
  readonly task_guid: string;
  /** Bytes of the gzip-compressed tar archive. */
  readonly size: number;
  /** Hex SHA-256 of the archive, as the cell computed it and the server checked it. */
  readonly sha256: string;
  readonly cell_id: string;
  readonly created_at: string;
}
