# Sourced by the tools that read lists of counts from the environment (WORLDS, SEEDS):
# `whole_numbers TOOL NAME FIRST VALUE` exits 2 with one line unless VALUE lists at least
# one whole number and each is FIRST or more.
whole_numbers() {
  local tool=$1 name=$2 first=$3 list n
  read -ra list <<< "$4"
  [ ${#list[@]} -gt 0 ] || { echo "$tool: $name names no value" >&2; exit 2; }
  for n in "${list[@]}"; do
    [[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge "$first" ] ||
      { echo "$tool: $name must list whole numbers from $first, got '$n'" >&2; exit 2; }
  done
}
