import { Option, type Command } from "commander";
import { GROUPS, readSettings, SERVE_SETTINGS, type Setting, type SettingsTable } from "../config/settings.js";

// commander's options, built from the settings table (config/settings.ts):
// the flag, its help with the default and the variable, its help group.
// commander is given no default and no variable of its own: an option it
// reports is one the command line named, and config/ takes the rest from
// the environment and the table, so that a value is checked in one place.

/** What the help shows after a setting's text: its default and its variable. */
function helpOf(s: Setting<unknown>): string {
  const switchOff = s.flag.startsWith("--no-");
  const shown = s.defaultText ?? (s.default === undefined || s.default === "" || typeof s.default === "boolean" ? undefined : String(s.default));
  const parts = [shown === undefined ? undefined : `default: ${shown}`, switchOff ? `env: ${s.env}=false` : `env: ${s.env}`].filter((p) => p !== undefined);
  return `${s.help} (${parts.join("; ")})`;
}

export function settingOption(s: Setting<unknown>): Option {
  return new Option(s.flag, helpOf(s)).helpGroup(`${GROUPS[s.group]}:`);
}

/** Adds every setting of `table` (or those named) to `command`, grouped in its help. */
export function addSettings(command: Command, table: SettingsTable, only?: readonly string[]): Command {
  for (const [key, s] of Object.entries(table)) if (only === undefined || only.includes(key)) command.addOption(settingOption(s));
  return command;
}

/** --db of a command that takes only a store: from the command line, else MARKETDATA_DB, else the default, checked. */
export function resolveDb(given: string | undefined, env: NodeJS.ProcessEnv): string {
  return readSettings({ db: SERVE_SETTINGS.db }, { db: given }, env).db;
}

/** --max-clock-skew of import, derive and consume, in seconds. */
export function resolveClockSkew(given: string | undefined, env: NodeJS.ProcessEnv): number {
  return readSettings({ maxClockSkew: SERVE_SETTINGS.maxClockSkew }, { maxClockSkew: given }, env).maxClockSkew;
}
