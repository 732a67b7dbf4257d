import { DEFAULT_CHAIN } from "../../domain/chains.js";

/** A collection row's reference (chains.ts collectionRef) in SQL both engines run: `alias` names the collections row. */
export function refSql(alias = "c"): string {
  return `CASE WHEN ${alias}.chain = '${DEFAULT_CHAIN}' THEN ${alias}.address ELSE ${alias}.chain || ':' || ${alias}.address END`;
}
