// Does nothing: what the dispatch benchmark launches, through hal and directly.
#version 450
#include "common.glsl"

void main() {}
