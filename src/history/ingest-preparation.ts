import { InvalidArgumentError, limits } from '../core/index.js';
import { canonicalTimestamp, dedupeKey } from './container-status.js';
import type { ContainerLaunch, ContainerOutput, EntityType } from './history-types.js';
import { entityTypes, ownerKinds } from './history-types.js';
import type { IngestRecord } from './ingest-records.js';
import { mapRawStatus } from './status-mapping.js';

/*
 * The checking half of `HistoryStore.ingest`, before any database work: every record validated
 * (a bad one refuses the whole batch, naming its field), mapped to the history items it adds and
 * the container changes (launch, finalization) it makes, duplicates within the batch dropped.
 */

export interface PendingItem {
  readonly container_id: string;
  readonly status: string;
  readonly external_timestamp: string | null;
  readonly exit_code: number | null;
  readonly entity_type: EntityType;
  readonly entity_id: string | null;
  readonly message: string | null;
  readonly dedupe_key: string;
}

export interface ContainerChange {
  launch?: ContainerLaunch;
  finalization?: {
    exit_code: number | null;
    logs: string;
    logs_size: number;
    truncated: boolean;
    outputs: readonly ContainerOutput[];
    error: string | null;
    failure: string | null;
    stopped: string | null;
  };
}

/** Validates and normalizes records into history items and per-container changes. */
export function prepareIngest(records: readonly IngestRecord[]): {
  items: PendingItem[];
  changes: Map<string, ContainerChange>;
} {
  const items: PendingItem[] = [];
  const seen = new Set<string>();
  const changes = new Map<string, ContainerChange>();
  const change = (id: string) => {
    const existing = changes.get(id);
    if (existing) return existing;
    const created: ContainerChange = {};
    changes.set(id, created);
    return created;
  };
  const push = (item: PendingItem) => {
    const key = `${item.container_id}\u0000${item.dedupe_key}`;
    if (seen.has(key)) return;
    seen.add(key);
    items.push(item);
  };
  records.forEach((record, index) => {
    const where = `records[${index}]`;
    switch (record.type) {
      case 'launch': {
        const c = record.container;
        requireId(c.id, `${where}.container.id`);
        if (!ownerKinds.includes(c.owner_kind)) {
          throw new InvalidArgumentError(
            `Invalid ${where}.container.owner_kind "${c.owner_kind}": expected one of ${ownerKinds.join(', ')}`,
            { field: `${where}.container.owner_kind` },
          );
        }
        const launch = {
          ...c,
          external_timestamp: timestamp(record.external_timestamp, `${where}.external_timestamp`),
        };
        change(c.id).launch = { ...c, system: c.system ?? null };
        // The Created item carries who launched it; the launch time keeps it idempotent.
        push(
          pending(
            c.id,
            'Created',
            launch.external_timestamp,
            null,
            record.entity_type ?? 'system',
            record.entity_id ?? null,
            record.entity_type === 'user' ? null : `Launched on cell ${c.cell_id}`,
          ),
        );
        break;
      }
      case 'event': {
        requireId(record.container_id, `${where}.container_id`);
        if (record.entity_type !== 'event' && record.entity_type !== 'service') {
          throw new InvalidArgumentError(
            `Invalid ${where}.entity_type "${String(record.entity_type)}": runtime observations are "event" or "service"`,
            { field: `${where}.entity_type` },
          );
        }
        push(
          pending(
            record.container_id,
            mapRawStatus(record.event),
            nullableTimestamp(record.external_timestamp, `${where}.external_timestamp`),
            record.exit_code ?? null,
            record.entity_type,
            null,
            record.message ?? null,
          ),
        );
        break;
      }
      case 'item': {
        requireId(record.container_id, `${where}.container_id`);
        if (!entityTypes.includes(record.entity_type)) {
          throw new InvalidArgumentError(`Invalid ${where}.entity_type "${String(record.entity_type)}"`, {
            field: `${where}.entity_type`,
          });
        }
        if (record.status === '')
          throw new InvalidArgumentError(`Invalid ${where}.status: empty`, { field: `${where}.status` });
        push(
          pending(
            record.container_id,
            record.status,
            nullableTimestamp(record.external_timestamp ?? null, `${where}.external_timestamp`),
            record.exit_code ?? null,
            record.entity_type,
            record.entity_id ?? null,
            record.message ?? null,
          ),
        );
        break;
      }
      case 'finalization': {
        requireId(record.container_id, `${where}.container_id`);
        change(record.container_id).finalization = {
          exit_code: record.exit_code,
          logs: record.logs,
          // The column is a PostgreSQL INTEGER: a log past 2 GiB is recorded as the most it holds
          // (its text is capped on the cell anyway), never refused, so the final status lands.
          logs_size: Math.min(record.logs_size, limits.maxInt32),
          truncated: record.logs_truncated,
          outputs: record.outputs,
          error: record.error,
          failure: record.failure ?? null,
          stopped: record.stopped ?? null,
        };
        break;
      }
      default:
        throw new InvalidArgumentError(`Invalid ${where}.type`, { field: `${where}.type` });
    }
  });
  return { items, changes };
}

export function pending(
  container_id: string,
  status: string,
  external_timestamp: string | null,
  exit_code: number | null,
  entity_type: EntityType,
  entity_id: string | null,
  message: string | null,
): PendingItem {
  return {
    container_id,
    status,
    external_timestamp,
    exit_code,
    entity_type,
    entity_id,
    message,
    dedupe_key: dedupeKey({ status, message, external_timestamp }),
  };
}

function requireId(id: unknown, field: string): void {
  if (typeof id !== 'string' || id === '')
    throw new InvalidArgumentError(`Invalid ${field}: a non-empty container id is required`, { field });
}

function timestamp(text: string, field: string): string {
  const canonical = canonicalTimestamp(text);
  if (canonical === undefined)
    throw new InvalidArgumentError(`Invalid ${field} "${text}": expected an ISO-8601 time`, { field });
  return canonical;
}

function nullableTimestamp(text: string | null, field: string): string | null {
  return text === null ? null : timestamp(text, field);
}
