/** A failure the user can fix: printed as one line, exit status 1, no stack. */
export class CliError extends Error {}
