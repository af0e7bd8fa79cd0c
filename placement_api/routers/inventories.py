"""Routes for inventories."""

from fastapi import APIRouter

router = APIRouter(tags=["inventories"])
