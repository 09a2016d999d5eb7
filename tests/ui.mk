# tests of src/ui
