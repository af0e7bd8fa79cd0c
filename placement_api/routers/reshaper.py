"""Routes for reshaper."""

from fastapi import APIRouter

router = APIRouter(tags=["reshaper"])
