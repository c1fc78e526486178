package e2e

// The seed recipe, relative to this package.
const seedRecipe = "../../../testdata/workloads/minimax_m3_mi355x.yaml"
