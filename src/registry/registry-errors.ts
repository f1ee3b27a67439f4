/**
 * The error codes of the OCI Distribution spec ("Error Codes"), with the HTTP status each is sent
 * with. Bodies are `{"errors":[{"code","message","detail"}]}` exactly as the spec writes them, so
 * skopeo, podman, crane and docker show the message to their users.
 */
export const registryErrorStatus = {
  BLOB_UNKNOWN: 404,
  BLOB_UPLOAD_INVALID: 400,
  BLOB_UPLOAD_UNKNOWN: 404,
  DIGEST_INVALID: 400,
  MANIFEST_BLOB_UNKNOWN: 400,
  MANIFEST_INVALID: 400,
  MANIFEST_UNKNOWN: 404,
  NAME_INVALID: 400,
  NAME_UNKNOWN: 404,
  SIZE_INVALID: 400,
  UNAUTHORIZED: 401,
  DENIED: 403,
  UNSUPPORTED: 405,
  TOOMANYREQUESTS: 429,
  /** Not in the spec's table; distribution sends it for server faults. */
  UNKNOWN: 500,
} as const;

export type RegistryErrorCode = keyof typeof registryErrorStatus;

export interface RegistryErrorBody {
  readonly errors: ReadonlyArray<{
    readonly code: string;
    readonly message: string;
    readonly detail?: unknown;
  }>;
}

export class RegistryError extends Error {
  readonly status: number;

  constructor(
    readonly code: RegistryErrorCode,
    message: string,
    readonly detail?: unknown,
    options: {
      readonly status?: number;
      readonly headers?: Readonly<Record<string, string>>;
      /** Further errors of the same response (e.g. every blob a manifest names that is missing). */
      readonly more?: readonly RegistryError[];
    } = {},
  ) {
    super(message);
    this.name = 'RegistryError';
    this.status = options.status ?? registryErrorStatus[code];
    this.headers = options.headers ?? {};
    this.more = options.more ?? [];
  }

  readonly headers: Readonly<Record<string, string>>;
  readonly more: readonly RegistryError[];

  body(): RegistryErrorBody {
    return { errors: [this, ...this.more].map((e) => e.#entry()) };
  }

  #entry(): { code: string; message: string; detail?: unknown } {
    return {
      code: this.code,
      message: this.message,
      ...(this.detail === undefined ? {} : { detail: this.detail }),
    };
  }
}
