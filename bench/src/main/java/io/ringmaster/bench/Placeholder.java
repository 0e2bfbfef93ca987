package io.ringmaster.bench; final class Placeholder {}
