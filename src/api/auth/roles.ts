/** The three roles of docs/auth.md, least to most: viewers read, operators also act, admins also manage tokens. */
export type Role = 'admin' | 'operator' | 'viewer';
export const roles: readonly Role[] = ['admin', 'operator', 'viewer'];

/** Who made a request: the token's id and its user name (the `entity_id` of user actions). */
export interface Principal {
  readonly token_id: string;
  readonly user: string;
  readonly role: Role;
}

const rank: Readonly<Record<Role, number>> = { viewer: 0, operator: 1, admin: 2 };

/** Whether `role` may do what `needed` may (each role can do everything the ones below it can). */
export function roleAllows(role: Role, needed: Role): boolean {
  return rank[role] >= rank[needed];
}
