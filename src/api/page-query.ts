/** The key small lists of records made over time are paged by: oldest first, ties by id. */
export function createdThenId(record: { created_at: string; id: string }): string {
  return `${record.created_at} ${record.id}`;
}
